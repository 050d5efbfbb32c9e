// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// How many checkout creations may be at Stripe at once (`CHECKOUT_CONCURRENCY`): one more is
/// refused at once instead of queueing, so a hung Stripe holds at most this many requests and no
/// webhook ever waits behind them.
final class CheckoutGate: Sendable {
    private let inFlight = Atomic<Int>(0)
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Runs `body` in a slot, or returns `nil` at once when every slot is taken.
    func run<Result: Sendable>(_ body: () async throws -> Result) async throws -> Result? {
        guard Self.admits(inFlight.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue, limit: limit) else {
            inFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing)
            return nil
        }
        defer { inFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
        return try await body()
    }

    /// Whether the request that made the count `count` (itself included) may go on.
    static func admits(_ count: Int, limit: Int) -> Bool { count <= limit }
}
