// SPDX-License-Identifier: Apache-2.0
import Shared
import Synchronization
import Testing
import TestSupport

/// ``withTimeout(_:_:)`` inside an ``OverrunHost``: the call ends on time even when its work
/// ignores cancellation, and the work ends in the host's group, which waits for it.
struct TimeoutTests {
    @Test func workThatFinishesInTimeGivesItsResult() async throws {
        let result = try await OverrunHost.with { try await withTimeout(.seconds(30)) { 42 } }
        #expect(result == 42)
    }

    @Test func anErrorOfTheWorkIsThrownAsItIs() async throws {
        struct Failure: Error {}
        await #expect(throws: Failure.self) {
            try await OverrunHost.with { try await withTimeout(.seconds(30)) { () async throws -> Int in throw Failure() } }
        }
    }

    /// Work that ignores cancellation (as a query blocked in PostgreSQL does) until it is released.
    @Test func theCallReturnsAtTheDeadlineAndTheHostWaitsForTheWork() async throws {
        let release = Gate()
        let workEnded = Flag()
        let returnedBeforeRelease = try await OverrunHost.with {
            await #expect(throws: TimeoutError.self) {
                try await withTimeout(.milliseconds(50)) {
                    await release.wait()
                    workEnded.raise()
                    return 0
                }
            }
            let ended = workEnded.isRaised
            release.open()
            return !ended
        }
        #expect(returnedBeforeRelease)
        // The host's scope ended only after the work it held.
        let ended = workEnded.isRaised
        #expect(ended)
    }

    @Test func workThatStopsWhenCancelledIsCancelledAtTheDeadline() async throws {
        let cancelled = Flag()
        _ = try await OverrunHost.with {
            await #expect(throws: TimeoutError.self) {
                try await withTimeout(.milliseconds(50)) {
                    do { try await Task.sleep(for: .seconds(60)) } catch { cancelled.raise() }
                    return 0
                }
            }
        }
        let wasCancelled = cancelled.isRaised
        #expect(wasCancelled)
    }

    @Test func cancellingTheCallerEndsTheCallAtOnceAndCancelsTheWork() async throws {
        let workCancelled = Flag()
        let started = Gate()
        try await OverrunHost.with {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    await #expect(throws: CancellationError.self) {
                        try await withTimeout(.seconds(60)) {
                            started.open()
                            do { try await Task.sleep(for: .seconds(60)) } catch { workCancelled.raise() }
                            return 0
                        }
                    }
                }
                await started.wait()
                group.cancelAll()
                try await group.waitForAll()
            }
        }
        let wasCancelled = workCancelled.isRaised
        #expect(wasCancelled)
    }
}

/// Opens once; waiters before and after go on.
private final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }
}

