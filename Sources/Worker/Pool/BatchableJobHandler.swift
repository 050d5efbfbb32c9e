// SPDX-License-Identifier: Apache-2.0
import Apply
import Logging
import PostgresNIO
import Shared

/// A handler whose whole work is writes in the database: the pool may apply several of its jobs
/// in one transaction, each inside its own savepoint (``WorkerPool`` batches).
///
/// ``applyAnnouncing(_:in:)`` writes everything the job does — state, record, announcements —
/// through the store it is given and must not commit; ``didCommit(_:_:)`` runs once the
/// transaction holding it committed (log lines, waking the deliveries).
///
/// Before a batch is applied, the pool loads what its jobs will read with one statement per
/// table (``PrefetchedRows``): first the links each job names (``linksToPrefetch(for:in:)``), then,
/// with those in memory, the locks and rows each job will take (``rowsToPrefetch(for:in:)``). A
/// handler that names nothing reads everything itself; so does a job whose guess was wrong.
protocol BatchableJobHandler: JobHandler {
    func applyAnnouncing(_ job: ClaimedJob, in store: StateStore) async throws -> AppliedEvent
    func didCommit(_ job: ClaimedJob, _ applied: AppliedEvent)
    /// The links ``applyAnnouncing(_:in:)`` will look up.
    func linksToPrefetch(for job: ClaimedJob, in store: StateStore) -> [PrefetchedRows.LinkKey]
    /// The locks and rows ``applyAnnouncing(_:in:)`` will take, found with the batch's links
    /// already in `store`.
    func rowsToPrefetch(for job: ClaimedJob, in store: StateStore) async throws -> PrefetchedRows.Plan
}

extension BatchableJobHandler {
    /// The job alone: applied and completed in one transaction of its own.
    func handle(_ job: ClaimedJob, completion: JobCompletion) async throws {
        let applied = try await completion.commit { connection in
            try await applySending(job, in: StateStore(connection: connection, logger: connection.logger))
        }
        didCommit(job, applied)
    }

    /// ``applyAnnouncing(_:in:)``, then what it held sent (``StateStore/flush()``): what every
    /// path does before the job's `RELEASE SAVEPOINT` or `COMMIT`. The deliveries are counted then.
    func applySending(_ job: ClaimedJob, in store: StateStore) async throws -> AppliedEvent {
        var applied = try await applyAnnouncing(job, in: store)
        try await store.flush()
        applied.deliveries += store.writes.deliveries(of: job.id)
        return applied
    }

    func linksToPrefetch(for job: ClaimedJob, in store: StateStore) -> [PrefetchedRows.LinkKey] { [] }

    func rowsToPrefetch(for job: ClaimedJob, in store: StateStore) async throws -> PrefetchedRows.Plan { .init() }
}

extension AppliedEvent {
    /// What every batchable handler does once the job's transaction committed.
    func didCommit(_ job: ClaimedJob, outbox: ForwardOutbox?, logger: Logger) {
        if deliveries > 0 { outbox?.onCreated() }
        log(job, to: logger)
    }
}

extension StateStore {
    /// The job's payload as `decode` makes it: once per batch (``PrefetchedRows/payload(of:_:)``).
    func payload<Payload: Sendable>(of job: ClaimedJob, _ decode: (ClaimedJob) throws -> Payload) rethrows -> Payload {
        try prefetched.payload(of: job.id) { try decode(job) }
    }
}
