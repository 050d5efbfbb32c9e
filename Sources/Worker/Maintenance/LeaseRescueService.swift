// SPDX-License-Identifier: Apache-2.0
import Logging
import ServiceLifecycle
import Shared

/// Returns jobs whose lease ran out (their worker died or hung) to their queue, or to the dead
/// letters when that was their last attempt: every `interval`, by the one worker holding the
/// `rescue` lease (``MaintenanceLease``), for every queue — not by every pool of every process.
struct LeaseRescueService: Service, CustomStringConvertible {
    let queues: [JobQueue]
    let lease: MaintenanceLease
    /// How often expired leases are looked for.
    var interval: Duration = .seconds(5)
    /// How long one rescue statement may take before it is abandoned and tried at the next pass.
    var statementTimeLimit: Duration = .seconds(30)
    let logger: Logger

    var description: String { "LeaseRescueService" }

    func run() async throws {
        await runPeriodically(every: interval, failure: "rescuing expired leases failed", logger: logger) { _ = try await runOnce() }
        try? await lease.release()
    }

    /// One pass, if this worker holds the lease.
    ///
    /// - Returns: the jobs returned, or `nil` when another worker holds the lease.
    func runOnce() async throws -> Int? {
        // Long enough that a holder between passes keeps it; short enough that another worker
        // takes over soon after the holder dies.
        guard try await lease.acquire(for: max(30, 3 * Double(interval.components.seconds))) else { return nil }
        var rescued = 0
        for queue in queues {
            while true {
                let count = try await withTimeout(statementTimeLimit) { try await queue.rescueExpiredLeases(limit: Self.batch) }
                rescued += count
                if count < Self.batch { break }
            }
        }
        return rescued
    }

    /// Rows returned by one statement.
    static let batch = 500
}
