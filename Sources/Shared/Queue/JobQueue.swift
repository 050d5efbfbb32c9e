// SPDX-License-Identifier: Apache-2.0
import Foundation
public import Logging
public import PostgresNIO

/// The PostgreSQL queue mechanism, for any queue table (see ``QueueName``).
///
/// ```swift
/// let queue = JobQueue(client: client, name: .events, configuration: .init(maxAttempts: 12), logger: logger)
/// for job in try await queue.dequeue(limit: 16, owner: "worker-1") {
///     try await client.withTransaction(logger: logger) { connection in
///         try await apply(job, on: connection)            // the job's own writes …
///         try await queue.complete(job, on: connection)   // … commit with its completion, or neither does
///     }
/// }
/// ```
///
/// A dequeued job is owned by a lease (`locked_by`, `locked_until`), not by an open transaction,
/// so a slow job holds no connection. Every write that finishes a job checks that the lease is
/// still this worker's, so a worker whose lease expired can never complete or fail a job that
/// another worker has taken since.
public struct JobQueue: Sendable {
    public struct Configuration: Sendable {
        /// Attempts before a job is dead (`MAX_ATTEMPTS`).
        public var maxAttempts: Int
        /// Backoff between attempts (`RETRY_BASE_SECONDS`, `RETRY_MAX_SECONDS`).
        public var retry: RetryPolicy
        /// How long a dequeued job is owned before the rescuer may hand it to another worker (`LEASE_SECONDS`).
        public var leaseSeconds: Double

        public init(maxAttempts: Int = 12, retry: RetryPolicy = .init(), leaseSeconds: Double = 60) {
            self.maxAttempts = maxAttempts
            self.retry = retry
            self.leaseSeconds = leaseSeconds
        }
    }

    public let client: PostgresClient
    public let name: QueueName
    public let configuration: Configuration
    let logger: Logger

    public init(client: PostgresClient, name: QueueName, configuration: Configuration = .init(), logger: Logger) {
        self.client = client
        self.name = name
        self.configuration = configuration
        self.logger = logger
    }

    var table: String { name.rawValue }

    /// The attribute columns as one `text[]`, in ``QueueName/attributeColumns`` order, NULL as ''.
    private var attributesExpression: String {
        "ARRAY[\(name.attributeColumns.map { "COALESCE(\($0)::text, '')" }.joined(separator: ", "))]::text[]"
    }

    /// Takes up to `limit` runnable jobs in one statement, oldest `run_at` first, and leases them to `owner`.
    ///
    /// Rows locked by a concurrent dequeue are skipped, never waited for. Nothing is taken while the
    /// queue is paused.
    public func dequeue(limit: Int, owner: String) async throws -> [ClaimedJob] {
        guard limit > 0 else { return [] }
        let rows = try await client.query(
            """
            UPDATE \(unescaped: table) SET state = 'running', attempts = attempts + 1,
                locked_by = \(owner), locked_until = now() + make_interval(secs => \(configuration.leaseSeconds)),
                updated_at = now()
            WHERE id IN (
                SELECT id FROM \(unescaped: table)
                WHERE state = 'pending' AND run_at <= now()
                  AND NOT EXISTS (SELECT 1 FROM queue_pauses WHERE queue = \(name.rawValue))
                  AND \(unescaped: name.runnableCondition)
                ORDER BY run_at
                LIMIT \(limit)
                FOR UPDATE SKIP LOCKED)
            RETURNING id, \(unescaped: name.kindColumn), attempts, payload, \(unescaped: attributesExpression)
            """, logger: logger)
        var jobs: [ClaimedJob] = []
        jobs.reserveCapacity(limit)
        let names = name.attributeColumns
        for try await (id, kind, attempts, payload, values) in rows.decode((Int64, String, Int32, ByteBuffer, [String]).self) {
            // A NULL column is left out (read as '').
            let attributes = Dictionary(uniqueKeysWithValues: zip(names, values).filter { !$0.1.isEmpty })
            jobs.append(
                ClaimedJob(id: id, queue: name, kind: kind, attempt: Int(attempts), owner: owner, payload: payload, attributes: attributes))
        }
        return jobs
    }

    /// Marks a job done inside the caller's transaction, so the job's own writes and its completion
    /// commit together or not at all.
    ///
    /// - Throws: ``JobQueueError/Code/leaseLost`` when the lease is no longer this attempt's; the
    ///   caller's transaction must then roll back.
    public func complete(_ job: ClaimedJob, on connection: PostgresConnection) async throws {
        let rows = try await connection.query(
            """
            UPDATE \(unescaped: table) SET state = 'done', locked_by = NULL, locked_until = NULL,
                last_error = NULL, finished_at = now(), updated_at = now()
            WHERE id = \(job.id) AND state = 'running' AND locked_by = \(job.owner) AND attempts = \(job.attempt)
            RETURNING id
            """, logger: logger)
        var completed = false
        for try await _ in rows { completed = true }
        guard completed else { throw JobQueueError(code: .leaseLost, jobID: job.id) }
    }

    /// Marks the jobs of one batch done inside the caller's transaction, in one statement.
    ///
    /// - Throws: ``JobQueueError/Code/leaseLost`` naming a job whose lease is no longer its
    ///   attempt's; the caller's transaction must then roll back, the whole batch with it.
    public func complete(_ jobs: [ClaimedJob], on connection: PostgresConnection) async throws {
        guard let owner = jobs.first?.owner else { return }
        precondition(jobs.allSatisfy { $0.owner == owner }, "a batch has one owner")
        let rows = try await connection.query(
            """
            UPDATE \(unescaped: table) AS q SET state = 'done', locked_by = NULL, locked_until = NULL,
                last_error = NULL, finished_at = now(), updated_at = now()
            FROM unnest(\(jobs.map(\.id)), \(jobs.map { Int32($0.attempt) })) AS leased (id, attempts)
            WHERE q.id = leased.id AND q.attempts = leased.attempts AND q.state = 'running' AND q.locked_by = \(owner)
            RETURNING q.id
            """, logger: logger)
        var completed = Set<Int64>()
        for try await id in rows.decode(Int64.self) { completed.insert(id) }
        if let lost = jobs.first(where: { !completed.contains($0.id) }) {
            throw JobQueueError(code: .leaseLost, jobID: lost.id)
        }
    }

    /// Marks many jobs of one owner done in one statement (jobs without writes of their own).
    ///
    /// - Parameter httpStatuses: the status each job's successful attempt was answered with, by
    ///   job id, kept in `http_status` where the queue ``QueueName/recordsHTTPStatus``.
    /// - Returns: the ids that were still leased to their owner and are now done.
    @discardableResult
    public func complete(_ jobs: [ClaimedJob], httpStatuses: [Int64: Int] = [:]) async throws -> Set<Int64> {
        guard let owner = jobs.first?.owner else { return [] }
        let ids = jobs.map(\.id)
        let rows = name.recordsHTTPStatus
            ? try await client.query(
                """
                UPDATE \(unescaped: table) AS q SET state = 'done', locked_by = NULL, locked_until = NULL,
                    last_error = NULL, finished_at = now(), updated_at = now(), http_status = NULLIF(answered.status, 0)
                FROM unnest(\(ids)::bigint[], \(jobs.map { Int16(clamping: httpStatuses[$0.id] ?? 0) })::smallint[]) AS answered (id, status)
                WHERE q.id = answered.id AND q.state = 'running' AND q.locked_by = \(owner)
                RETURNING q.id
                """, logger: logger)
            : try await client.query(
                """
                UPDATE \(unescaped: table) SET state = 'done', locked_by = NULL, locked_until = NULL,
                    last_error = NULL, finished_at = now(), updated_at = now()
                WHERE id = ANY(\(ids)) AND state = 'running' AND locked_by = \(owner)
                RETURNING id
                """, logger: logger)
        var done = Set<Int64>()
        for try await id in rows.decode(Int64.self) { done.insert(id) }
        return done
    }

    /// Records a failed attempt and schedules the next one, or parks the job as dead after `maxAttempts`.
    ///
    /// - Parameters:
    ///   - job: the failed job.
    ///   - error: what went wrong, kept in the attempt history and `last_error`.
    ///   - retryAfter: a delay the handler asks for (a `Retry-After`), instead of the backoff.
    ///   - durationSeconds: how long the attempt ran.
    ///   - httpStatus: the status a remote server answered, for attempts that called one.
    public func fail(
        _ job: ClaimedJob, error: String, retryAfter: Double? = nil, durationSeconds: Double? = nil, httpStatus: Int? = nil
    ) async throws -> FailureOutcome {
        let delay = retryAfter ?? configuration.retry.delay(afterAttempt: job.attempt)
        let maxAttempts = configuration.maxAttempts
        let error = String(error.prefix(4_000))
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE \(unescaped: table) SET
                    state = CASE WHEN attempts >= \(maxAttempts) THEN 'dead' ELSE 'pending' END,
                    run_at = now() + make_interval(secs => \(delay)),
                    finished_at = CASE WHEN attempts >= \(maxAttempts) THEN now() END,
                    locked_by = NULL, locked_until = NULL, last_error = \(error), updated_at = now()
                WHERE id = \(job.id) AND state = 'running' AND locked_by = \(job.owner) AND attempts = \(job.attempt)
                RETURNING state, run_at
                """, logger: logger)
            var outcome = FailureOutcome.leaseLost
            for try await (state, runAt) in rows.decode((String, Date).self) {
                outcome = state == "dead" ? .dead : .retry(at: runAt)
            }
            guard outcome != .leaseLost else { return outcome }
            try await connection.query(
                """
                INSERT INTO queue_attempts (queue, job_id, attempt, worker, error, duration_ms, http_status)
                VALUES (\(name.rawValue), \(job.id), \(job.attempt), \(job.owner), \(error),
                        \(durationSeconds.map { $0 * 1000 }), \(httpStatus))
                """, logger: logger)
            return outcome
        }
    }

    /// Gives back jobs that were dequeued but not started (on shutdown): pending again, the attempt not counted.
    public func release(_ jobs: [ClaimedJob]) async throws {
        guard let owner = jobs.first?.owner else { return }
        try await client.query(
            """
            UPDATE \(unescaped: table) SET state = 'pending', attempts = attempts - 1,
                locked_by = NULL, locked_until = NULL, updated_at = now()
            WHERE id = ANY(\(jobs.map(\.id))) AND state = 'running' AND locked_by = \(owner)
            """, logger: logger)
    }

    /// Extends the leases of jobs that are still running, for jobs that take longer than a lease.
    public func extendLeases(of jobIDs: [Int64], owner: String) async throws {
        guard !jobIDs.isEmpty else { return }
        try await client.query(
            """
            UPDATE \(unescaped: table) SET locked_until = now() + make_interval(secs => \(configuration.leaseSeconds))
            WHERE id = ANY(\(jobIDs)) AND state = 'running' AND locked_by = \(owner)
            """, logger: logger)
    }
}
