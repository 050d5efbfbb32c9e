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

    /// Gives the lease up (graceful shutdown), so that another worker need not wait for it to run
    /// out, within `limit`: at shutdown with the database gone, the lease simply runs out instead
    /// of holding the process (issue 38: a worker took 52 s to stop).
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

    /// Runs `pass` if this worker holds the lease (taken or renewed for its ``term(interval:)``),
    /// and records how it ended. At ``passTimeLimit(interval:requested:)``, counted from before
    /// the lease is taken, the pass is cancelled and ``TimeoutError`` thrown, while the lease is
    /// still this worker's; work that ignores cancellation (a query already inside PostgreSQL) is
    /// abandoned and may run on (``withTimeout(_:file:line:_:)``).
    ///
    /// - Parameter timeLimit: how long the service allows one pass, if less than the lease does.
    /// - Returns: what `pass` returned, or `nil` when another worker holds the lease.
    func ifHeld<Result: Sendable>(
        interval: Duration, timeLimit: Duration? = nil, _ pass: @escaping @Sendable () async throws -> Result
    ) async throws -> Result? {
        let lease = self
        let limit = Self.passTimeLimit(interval: interval, requested: timeLimit)
        do {
            return try await withTimeout(limit) { () async throws -> Result? in
                let term = Self.term(interval: interval, requested: timeLimit).components
                guard try await lease.acquire(for: Double(term.seconds) + Double(term.attoseconds) / 1e18) else { return nil }
                do {
                    let result = try await pass()
                    try await lease.recordRun(error: nil)
                    return result
                } catch {
                    try? await lease.recordRun(error: ErrorText.describe(error))
                    throw error
                }
            }
        } catch let error as TimeoutError {
            // Recorded here: the pass's own task is cancelled, and PostgresNIO sends nothing for it.
            try? await recordRun(error: "the pass ran past its time limit of \(limit)")
            throw error
        }
    }

    /// How long the lease is taken or renewed for at each pass: two intervals and a minute, so
    /// that a missed run does not hand it over; shorter for a service whose passes are short next
    /// to that minute (the balance announcer: every second, at most ``BalanceAnnouncer/passTimeLimit``
    /// a pass), so that a worker killed holding it is replaced sooner. Never shorter than two
    /// intervals, nor than a whole pass and the wait before the next (`requested + interval`),
    /// each with ``stopMargin``: a live holder renews it before it runs out.
    static func term(interval: Duration, requested: Duration? = nil) -> Duration {
        let standard = interval * 2 + .seconds(60)
        guard let requested else { return standard }
        return min(standard, max(interval * 2, requested + interval) + stopMargin)
    }

    /// How far short of the lease's term a pass is stopped: room for the cancelled pass to end
    /// and for the clocks of this process and PostgreSQL to differ.
    static let stopMargin: Duration = .seconds(10)

    /// How long one pass may run: what its service asks, and never past ``stopMargin`` before the
    /// lease it was started under runs out. A pass that outlived its lease could run beside the
    /// next holder's: the same answer sent to Apple twice, the same purchase acknowledged twice.
    static func passTimeLimit(interval: Duration, requested: Duration?) -> Duration {
        let ceiling = term(interval: interval, requested: requested) - stopMargin
        return requested.map { min($0, ceiling) } ?? ceiling
    }
}
