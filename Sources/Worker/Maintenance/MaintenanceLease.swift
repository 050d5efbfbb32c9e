// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import Shared

/// The leader lease of one maintenance task (`maintenance_leases`): of all the workers running
/// the task's service, only the one holding the lease runs it; the holder renews it at each run,
/// and when it dies its lease runs out and another worker takes over. The same scheme as the
/// recovery streams' leases (`recovery_checkpoints`), for tasks without a checkpoint.
struct MaintenanceLease: Sendable {
    let client: PostgresClient
    let task: String
    let owner: String
    let logger: Logger

    /// Takes or renews the lease for `seconds`.
    ///
    /// - Returns: whether this worker holds it now.
    func acquire(for seconds: Double) async throws -> Bool {
        let rows = try await client.query(
            """
            INSERT INTO maintenance_leases (task, leased_by, leased_until)
            VALUES (\(task), \(owner), now() + make_interval(secs => \(seconds)))
            ON CONFLICT (task) DO UPDATE SET leased_by = EXCLUDED.leased_by, leased_until = EXCLUDED.leased_until
                WHERE maintenance_leases.leased_until < now() OR maintenance_leases.leased_by = EXCLUDED.leased_by
            RETURNING task
            """, logger: logger)
        var held = false
        for try await _ in rows { held = true }
        return held
    }

    /// Records how a run ended (`nil`: it succeeded).
    func recordRun(error: String?) async throws {
        try await client.query(
            """
            UPDATE maintenance_leases SET last_run_at = now(), last_error = \(error.map { String($0.prefix(500)) })
            WHERE task = \(task) AND leased_by = \(owner)
            """, logger: logger)
    }

    /// Gives the lease up (graceful shutdown), so that another worker need not wait for it to run out.
    /// Gives the lease up, within `limit`: at shutdown with the database gone, the lease simply
    /// runs out instead of holding the process (issue 38: a worker took 52 s to stop).
    func release(within limit: Duration = .seconds(2)) async throws {
        let (client, task, owner, logger) = (client, task, owner, logger)
        _ = try await withTimeout(limit) {
            try await client.query(
                "UPDATE maintenance_leases SET leased_until = now() WHERE task = \(task) AND leased_by = \(owner)", logger: logger)
        }
    }
}

extension MaintenanceLease {
    /// The loop of a leader-run maintenance service: a pass now, then every `interval`, until
    /// graceful shutdown, when the lease is given up so that another worker takes over at once.
    func runPeriodically(every interval: Duration, failure: String, logger: Logger, _ pass: @escaping @Sendable () async throws -> Void) async {
        await Worker.runPeriodically(every: interval, failure: failure, logger: logger, pass)
        try? await release()
    }

    /// Runs `pass` if this worker holds the lease (taken or renewed for two intervals and a
    /// margin, so that a missed run does not hand it over), and records how it ended.
    ///
    /// - Returns: what `pass` returned, or `nil` when another worker holds the lease.
    func ifHeld<Result: Sendable>(interval: Duration, _ pass: () async throws -> Result) async throws -> Result? {
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        guard try await acquire(for: 2 * seconds + 60) else { return nil }
        do {
            let result = try await pass()
            try await recordRun(error: nil)
            return result
        } catch {
            try? await recordRun(error: ErrorText.describe(error))
            throw error
        }
    }
}
