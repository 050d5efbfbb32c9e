// SPDX-License-Identifier: Apache-2.0
import Shared
import Synchronization
import Testing

/// ``withCancellingTimeout(_:_:)`` leaves nothing running once it returns, whichever way it ends.
struct CancellingTimeoutTests {
    @Test func workThatFinishesInTimeGivesItsResult() async throws {
        #expect(try await withCancellingTimeout(.seconds(30)) { 42 } == 42)
    }

    @Test func workThatTakesTooLongIsCancelledAndOverBeforeTheCallReturns() async throws {
        let finished = Atomic(false)
        await #expect(throws: TimeoutError.self) {
            try await withCancellingTimeout(.milliseconds(50)) {
                // Ends only when cancelled; records that it ended.
                defer { finished.store(true, ordering: .sequentiallyConsistent) }
                try? await Task.sleep(for: .seconds(60))
                return 0
            }
        }
        let ended = finished.load(ordering: .sequentiallyConsistent)
        #expect(ended)
    }

    @Test func anErrorOfTheWorkIsThrownAsItIs() async throws {
        struct Failure: Error {}
        await #expect(throws: Failure.self) { try await withCancellingTimeout(.seconds(30)) { () async throws -> Int in throw Failure() } }
    }
}
