// SPDX-License-Identifier: Apache-2.0
import Apply
import Logging
import PostgresNIO
import Shared

/// Applying claimed events in batches: one transaction and one commit for many events.
///
/// Each job of a batch is applied inside its own savepoint, so a failing job rolls back only
/// itself; it is then retried or dead-lettered exactly as alone, after the batch committed. The
/// completions of the applied jobs are written in the same transaction as their state, so a
/// crash leaves every job of the batch applied and done, or none of them. Anything that stops
/// the batch itself from committing (a lost lease, a lost connection, a deadlock outside a
/// savepoint) rolls all of it back, and each job then runs alone.
extension WorkerPool {
    /// What became of one job inside a batch's transaction.
    enum BatchOutcome {
        case applied(ClaimedJob, any BatchableJobHandler, AppliedEvent)
        case failed(ClaimedJob, any Error)
        /// Its locks were held by another transaction beyond ``batchLockTimeout``: rolled back to
        /// its savepoint, not counted as an attempt, and run alone once the batch has committed.
        case deferred(ClaimedJob)
    }

    /// How long a job inside a batch waits for an entity's lock before it is deferred. A batch
    /// holds the locks of its earlier jobs until it commits; two batches (of two processes) that
    /// want each other's entities would otherwise wait for each other until PostgreSQL's deadlock
    /// detection breaks the cycle after `deadlock_timeout` (1 s) by failing an attempt.
    static let batchLockTimeout = "50ms"

    /// Whether a job's error inside a batch means "another transaction holds what it needs".
    static func isLockConflict(_ error: any Error) -> Bool {
        guard let psql = error as? PSQLError, let state = psql.serverInfo?[.sqlState] else { return false }
        return state == "55P03" || state == "40P01"  // lock_not_available, deadlock_detected
    }

    /// Applies `jobs` in one transaction when every one has a ``BatchableJobHandler``; else,
    /// or when the batch cannot commit, runs each alone.
    func executeBatch(_ jobs: [ClaimedJob]) async {
        // In the order stored: a provider's events of one entity are applied in that order.
        let ordered = BatchPlan.ordered(jobs)
        let batchable = ordered.compactMap { job in (handlers[job.kind] as? any BatchableJobHandler).map { (job, $0) } }
        guard batchable.count == ordered.count else {
            for job in ordered { await execute(job) }
            return
        }
        let started = ContinuousClock.now
        let outcomes: [BatchOutcome]
        do {
            do {
                outcomes = try await queue.client.withTransaction(logger: logger) { connection in
                    try await self.apply(batchable, on: connection, inSavepoints: false)
                }
            } catch let error as PostgresTransactionError where error.closureError is JobNeedsItsOwnSavepoint && error.rollbackError == nil {
                outcomes = try await queue.client.withTransaction(logger: logger) { connection in
                    try await self.apply(batchable, on: connection, inSavepoints: true)
                }
            }
        } catch {
            logger.warning(
                "a batch did not commit; its jobs run one by one",
                metadata: ["queue": "\(queue.name)", "jobs": "\(ordered.count)", "error": "\(ErrorText.describe(error))"])
            for job in ordered { await execute(job) }
            return
        }
        let elapsed = started.duration(to: .now)
        for outcome in outcomes {
            switch outcome {
            case let .deferred(job):
                await execute(job)
            case let .applied(job, handler, applied):
                handler.didCommit(job, applied)
                metrics?.countAttempt(queue.name, .done, duration: elapsed)
            case let .failed(job, error):
                var logger = self.logger
                logger[metadataKey: "job_id"] = "\(job.id)"
                logger[metadataKey: "queue"] = "\(job.queue)"
                logger[metadataKey: "attempt"] = "\(job.attempt)"
                await recordFailure(of: job, error, after: elapsed, logger: logger)
            }
        }
    }

    /// A job of a batch applied without savepoints failed: the batch is rolled back and applied
    /// again, each job in a savepoint. Most batches have no failing job and save the two
    /// statements a savepoint costs per job; a batch with one is applied twice.
    struct JobNeedsItsOwnSavepoint: Error {}

    /// Inside the batch's transaction: what the jobs will read loaded together, the jobs, then the
    /// applied ones completed. Every job's writes are held in the store (``HeldWrites``): without
    /// savepoints all of them are sent in one statement after the last job; in savepoints, each
    /// job's before its `RELEASE SAVEPOINT`.
    private func apply(
        _ batch: [(ClaimedJob, any BatchableJobHandler)], on connection: PostgresConnection, inSavepoints: Bool
    ) async throws -> [BatchOutcome] {
        var outcomes: [BatchOutcome] = []
        outcomes.reserveCapacity(batch.count)
        try await connection.query("SELECT set_config('lock_timeout', \(Self.batchLockTimeout), true)", logger: logger)
        let prefetched = PrefetchedRows()
        let store = StateStore(connection: connection, logger: logger, prefetched: prefetched)
        try await Self.prefetch(batch, into: store)
        if !inSavepoints {
            do {
                for (job, handler) in batch {
                    outcomes.append(.applied(job, handler, try await handler.applyAnnouncing(job, in: store)))
                }
                try await store.flush()
            } catch {
                throw JobNeedsItsOwnSavepoint()
            }
            outcomes = outcomes.map { outcome in
                guard case .applied(let job, let handler, var applied) = outcome else { return outcome }
                applied.deliveries += store.writes.deliveries(of: job.id)
                return .applied(job, handler, applied)
            }
        }
        for (job, handler) in batch where inSavepoints {
            try await connection.query("SAVEPOINT job", logger: logger)
            prefetched.savepointStarted()
            do {
                let applied = try await handler.applySending(job, in: store)
                try await connection.query("RELEASE SAVEPOINT job", logger: logger)
                prefetched.savepointReleased()
                outcomes.append(.applied(job, handler, applied))
            } catch {
                // Only this job's writes and locks go, held ones too; a failure to roll back fails the batch.
                store.writes.discard()
                try await connection.query("ROLLBACK TO SAVEPOINT job", logger: logger)
                try await connection.query("RELEASE SAVEPOINT job", logger: logger)
                prefetched.savepointRolledBack()
                outcomes.append(Self.isLockConflict(error) ? .deferred(job) : .failed(job, error))
            }
        }
        let applied = outcomes.compactMap { outcome -> ClaimedJob? in
            if case let .applied(job, _, _) = outcome { return job } else { return nil }
        }
        try await queue.complete(applied, on: connection)
        return outcomes
    }

    /// Loads what the batch's jobs will read, one statement per table: their links; then the
    /// advisory locks that are free (none is waited for, so two batches never wait for each
    /// other here); then the entitlements and transactions of every job whose locks are all held.
    /// A job whose plan cannot be made (its payload is malformed) reads for itself and fails alone.
    static func prefetch(_ batch: [(ClaimedJob, any BatchableJobHandler)], into store: StateStore) async throws {
        try await store.prefetch(links: Set(batch.flatMap { job, handler in handler.linksToPrefetch(for: job, in: store) }))
        var plans: [PrefetchedRows.Plan] = []
        for (job, handler) in batch {
            if let plan = try? await handler.rowsToPrefetch(for: job, in: store) { plans.append(plan) }
        }
        let held = try await store.tryLock(plans.reduce(into: Set<String>()) { $0.formUnion($1.lockKeys) })
        var rows = PrefetchedRows.Plan()
        for plan in plans where plan.lockKeys.isSubset(of: held) { rows.formUnion(plan) }
        try await store.prefetch(rows)
    }
}
