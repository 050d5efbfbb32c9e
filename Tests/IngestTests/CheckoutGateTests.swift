// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Ingest

/// The checkout gate refuses at once past its limit and frees its slot however the call ends.
struct CheckoutGateTests {
    @Test(arguments: [(1, 1, true), (2, 1, false), (16, 16, true), (17, 16, false)])
    func admits(_ count: Int, _ limit: Int, _ expected: Bool) {
        #expect(CheckoutGate.admits(count, limit: limit) == expected)
    }

    @Test func aFullGateRefusesAndAFinishedCallFreesItsSlot() async throws {
        let gate = CheckoutGate(limit: 1)
        let inside = AsyncStream<Void>.makeStream()
        let release = AsyncStream<Void>.makeStream()
        async let held: Int? = gate.run {
            inside.continuation.yield()
            for await _ in release.stream { break }
            return 1
        }
        for await _ in inside.stream { break }
        #expect(try await gate.run { 2 } == nil, "the one slot is taken")
        release.continuation.yield()
        #expect(try await held == 1)
        struct Failed: Error {}
        await #expect(throws: Failed.self) { try await gate.run { () async throws -> Int in throw Failed() } }
        #expect(try await gate.run { 3 } == 3, "a failed call gave its slot back")
    }
}
