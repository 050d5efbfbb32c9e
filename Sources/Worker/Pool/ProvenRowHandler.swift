// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import Shared
import Synchronization

/// Applies an events row only when Sluice stored it (``EventProof``, `EVENT_SIGNING_KEY`): it
/// carries a valid proof, or it has none and was stored before the cutover the worker recorded
/// when it first ran with the key. Anything else fails its attempts and is dead-lettered, with
/// the reason in its history, never applied.
final class ProvenRowHandler: BatchableJobHandler {
    let inner: any BatchableJobHandler
    let proof: EventProof
    /// `event_proof_cutover`, read once when a row without proof first comes.
    private let cutover = Mutex<Int64?>(nil)

    init(_ inner: any BatchableJobHandler, proof: EventProof) {
        self.inner = inner
        self.proof = proof
    }

    struct Unproven: Error, CustomStringConvertible {
        var reason: String
        var description: String { "not applied: \(reason) (EVENT_SIGNING_KEY); the row was not stored by Sluice" }
    }

    func applyAnnouncing(_ job: ClaimedJob, in store: StateStore) async throws -> AppliedEvent {
        try await check(job, on: store.connection)
        return try await inner.applyAnnouncing(job, in: store)
    }

    /// Only a row that carries a valid proof has its reads loaded ahead: nothing of a row not
    /// proven yet (a forged one, or one without proof, checked against the cutover when applied)
    /// chooses what the batch locks or loads.
    func linksToPrefetch(for job: ClaimedJob, in store: StateStore) -> [PrefetchedRows.LinkKey] {
        carriesValidProof(job) ? inner.linksToPrefetch(for: job, in: store) : []
    }

    func rowsToPrefetch(for job: ClaimedJob, in store: StateStore) async throws -> PrefetchedRows.Plan {
        carriesValidProof(job) ? try await inner.rowsToPrefetch(for: job, in: store) : .init()
    }

    func didCommit(_ job: ClaimedJob, _ applied: AppliedEvent) {
        inner.didCommit(job, applied)
    }

    private func check(_ job: ClaimedJob, on connection: PostgresConnection) async throws {
        guard job.attributes["proof"] != nil else {
            guard job.id <= (try await cutover(on: connection)) else { throw Unproven(reason: "it carries no proof") }
            return
        }
        guard carriesValidProof(job) else { throw Unproven(reason: "its proof does not match") }
    }

    /// Whether the row carries a proof, and it matches.
    func carriesValidProof(_ job: ClaimedJob) -> Bool {
        // bytea as text: \x and 64 hex digits.
        guard let text = job.attributes["proof"], text.hasPrefix("\\x"), let presented = SHA256Hex.bytes(text.dropFirst(2)) else {
            return false
        }
        return proof.verifies(
            presented, source: job.kind, externalID: job.attributes["external_id"] ?? "", type: job.attributes["type"] ?? "",
            origin: job.attributes["origin"] ?? "", payload: job.payload)
    }

    private func cutover(on connection: PostgresConnection) async throws -> Int64 {
        if let known = cutover.withLock({ $0 }) { return known }
        var found: Int64 = 0
        for try await id in try await connection.query(
            "SELECT last_unproven_id FROM event_proof_cutover WHERE id = 1", logger: connection.logger
        ).decode(Int64.self) {
            found = id
        }
        cutover.withLock { $0 = found }
        return found
    }

    /// Records, once, that rows stored so far may carry no proof: run by `worker run` at start
    /// with the key, before it applies anything.
    static func recordCutover(client: PostgresClient, logger: Logger) async throws {
        try await client.query(
            """
            INSERT INTO event_proof_cutover (id, last_unproven_id)
            SELECT 1, coalesce(max(id), 0) FROM events ON CONFLICT (id) DO NOTHING
            """, logger: logger)
    }
}
