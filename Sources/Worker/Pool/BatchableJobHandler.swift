// SPDX-License-Identifier: Apache-2.0
import Logging
import PostgresNIO
import Shared

/// A handler whose whole work is writes in the database: the pool may apply several of its jobs
/// in one transaction, each inside its own savepoint (``WorkerPool`` batches).
///
/// ``applyAnnouncing(_:on:)`` writes everything the job does — state, record, announcements — on the
/// connection it is given and must not commit; ``didCommit(_:_:)`` runs once the transaction
/// holding it committed (log lines, waking the deliveries).
protocol BatchableJobHandler: JobHandler {
    func applyAnnouncing(_ job: ClaimedJob, on connection: PostgresConnection) async throws -> AppliedEvent
    func didCommit(_ job: ClaimedJob, _ applied: AppliedEvent)
}

extension BatchableJobHandler {
    /// The job alone: applied and completed in one transaction of its own.
    func handle(_ job: ClaimedJob, completion: JobCompletion) async throws {
        let applied = try await completion.commit { connection in try await applyAnnouncing(job, on: connection) }
        didCommit(job, applied)
    }
}

extension AppliedEvent {
    /// What every batchable handler does once the job's transaction committed.
    func didCommit(_ job: ClaimedJob, outbox: ForwardOutbox?, logger: Logger) {
        if deliveries > 0 { outbox?.onCreated() }
        log(job, to: logger)
    }
}
