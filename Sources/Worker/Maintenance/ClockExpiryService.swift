// SPDX-License-Identifier: Apache-2.0
import Logging
import ServiceLifecycle

/// Runs ``ClockExpirySweep`` every `CLOCK_SWEEP_INTERVAL_SECONDS` in `worker run`, in the one
/// worker that holds the `clock-expiry` lease (``MaintenanceLease``); another takes over within
/// two intervals when it dies. The sweep's `SKIP LOCKED` keeps even overlapping sweeps from
/// announcing a row twice; the lease spares the other workers the query.
struct ClockExpiryService: Service, CustomStringConvertible {
    let sweep: ClockExpirySweep
    let lease: MaintenanceLease
    let interval: Duration
    let logger: Logger

    var description: String { "ClockExpiryService" }

    func run() async throws {
        await lease.runPeriodically(every: interval, failure: "clock expiry sweep failed", logger: logger) { try await runOnce() }
    }

    /// One pass, if this worker holds the lease.
    ///
    /// - Returns: the entitlements announced expired, or `nil` when another worker holds the lease.
    @discardableResult
    func runOnce() async throws -> Int? {
        try await lease.ifHeld(interval: interval) {
            let swept = try await sweep.sweep()
            if swept > 0 { logger.info("announced access ended by the clock", metadata: ["entitlements": "\(swept)"]) }
            return swept
        }
    }
}
