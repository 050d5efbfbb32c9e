// SPDX-License-Identifier: Apache-2.0
import Logging
import ServiceLifecycle
import Shared

/// Expires what is left of the currency grants whose subscription period ended (docs/credits.md,
/// `--currency-grants-expire true`): each pass takes, through `sluice_expire_balance_lots`, what
/// every due grant still holds, as a ledger row of cause `expiry` that the ``BalanceAnnouncer``
/// announces. Runs in the worker holding the `balance-expiry` lease, every
/// `CLOCK_SWEEP_INTERVAL_SECONDS`; a pass does at most ``batch`` grants and goes on while it
/// finds that many.
struct BalanceExpiryService: Service, CustomStringConvertible {
    static let batch = 100

    let store: BalanceStore
    let lease: MaintenanceLease
    let interval: Duration
    let logger: Logger

    var description: String { "BalanceExpiryService" }

    func run() async throws {
        await lease.runPeriodically(every: interval, failure: "expiring currency grants failed", logger: logger) { try await runOnce() }
    }

    /// One pass, if this worker holds the lease.
    ///
    /// - Returns: how many grants expired, or `nil` when another worker holds the lease.
    @discardableResult
    func runOnce() async throws -> Int? {
        try await lease.ifHeld(interval: interval) {
            var expired = 0
            var last: Int
            repeat {
                try Task.checkCancellation()
                last = try await store.expireDue(limit: Self.batch)
                expired += last
            } while last == Self.batch
            if expired > 0 { logger.info("expired currency grants at the end of their period", metadata: ["grants": "\(expired)"]) }
            return expired
        }
    }
}
