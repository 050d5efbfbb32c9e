// SPDX-License-Identifier: Apache-2.0
import Logging
import PostgresNIO

extension JobQueue {
    /// Returns jobs whose lease expired (their worker died or hung) to `pending`, or to `dead` when
    /// that lost attempt was the last one, and records the lost attempt in the history.
    ///
    /// - Parameter limit: the most rows handled by one call; call again while it returns `limit`.
    /// - Returns: how many jobs were rescued.
    @discardableResult
    public func rescueExpiredLeases(limit: Int = 500) async throws -> Int {
        let rows = try await client.query(
            """
            WITH expired AS (
                SELECT id, attempts, locked_by FROM \(unescaped: table)
                WHERE state = 'running' AND locked_until < now()
                ORDER BY locked_until
                LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
            ), rescued AS (
                UPDATE \(unescaped: table) AS job SET
                    state = CASE WHEN job.attempts >= \(configuration.maxAttempts) THEN 'dead' ELSE 'pending' END,
                    finished_at = CASE WHEN job.attempts >= \(configuration.maxAttempts) THEN now() END,
                    run_at = now(), locked_by = NULL, locked_until = NULL,
                    last_error = 'lease expired: the worker holding it stopped or hung', updated_at = now()
                FROM expired WHERE job.id = expired.id
                RETURNING job.id, expired.attempts, expired.locked_by
            )
            INSERT INTO queue_attempts (queue, job_id, attempt, worker, error)
            SELECT \(name.rawValue), id, attempts, locked_by, 'lease expired: the worker holding it stopped or hung'
            FROM rescued
            RETURNING job_id
            """, logger: logger)
        var count = 0
        for try await _ in rows { count += 1 }
        if count > 0 {
            logger.warning("returned jobs with expired leases", metadata: ["queue": "\(name)", "count": "\(count)"])
        }
        return count
    }
}
