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

    /// A deadline inside work the host runs (a completion written inside an attempt) gives up on
    /// time as well, even when its own work ignores cancellation.
    @Test func aDeadlineInsideHostedWorkAlsoReturnsOnTime() async throws {
        let release = Gate()
        let outcome = try await OverrunHost.with {
            defer { release.open() }
            return try await withTimeout(.seconds(10)) {
                do {
                    _ = try await withTimeout(.milliseconds(20)) {
                        await release.wait()
                        return 0
                    }
                    return "the inner work finished"
                } catch is TimeoutError {
                    return "the inner deadline passed"
                }
            }
        }
        #expect(outcome == "the inner deadline passed")
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

/// What a host does with work that never ends once its scope is over (``OverrunHost/Patience``).
struct OverrunPatienceTests {
    @Test func workStillRunningWhenThePatienceRunsOutIsHandedOverWithWhereItCameFrom() async throws {
        let release = Gate()
        let handedOver = Mutex<[[String: Int]]>([])
        let patience = OverrunHost.Patience(limit: .milliseconds(200)) { work in
            handedOver.withLock { $0.append(work) }
            release.open()  // A process exits here; the test lets the work end instead.
        }
        try await OverrunHost.with(patience: patience) {
            await #expect(throws: TimeoutError.self) {
                try await withTimeout(.milliseconds(20)) {
                    await release.wait()
                    return 0
                }
            }
            #expect(handedOver.withLock { $0.isEmpty }, "nothing is handed over while the scope lasts")
        }
        let calls = handedOver.withLock { $0 }
        #expect(calls.count == 1)
        let origins = Array(calls.first?.keys ?? [:].keys)
        #expect(origins.count == 1)
        #expect(origins.first?.hasPrefix("SharedTests/TimeoutTests.swift:") == true, "origins: \(origins)")
        #expect(calls.first?.values.first == 1)
    }

    @Test func workThatEndsWithinThePatienceIsNotHandedOver() async throws {
        let release = Gate()
        let handedOver = Flag()
        let patience = OverrunHost.Patience(limit: .seconds(30)) { _ in handedOver.raise() }
        try await OverrunHost.with(patience: patience) {
            await #expect(throws: TimeoutError.self) {
                try await withTimeout(.milliseconds(20)) {
                    await release.wait()
                    return 0
                }
            }
            release.open()
        }
        let wasHandedOver = handedOver.isRaised
        #expect(!wasHandedOver)
    }

    /// Work that finished in time still ends a moment after its caller went on (its timer is
    /// cancelled and awaited), so even then the host waits briefly, within any sensible patience.
    @Test func aHostWhoseWorkFinishedInTimeEndsWithinItsPatience() async throws {
        let handedOver = Flag()
        let host = try await OverrunHost.with(patience: .init(limit: .seconds(5)) { _ in handedOver.raise() }) {
            _ = try await withTimeout(.seconds(30)) { 1 }
            return OverrunHost.current
        }
        #expect(host?.runningWork.isEmpty == true)
        let wasHandedOver = handedOver.isRaised
        #expect(!wasHandedOver)
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

