// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Shared

/// Gives the queue rows stored before the worker first ran with `EVENT_SIGNING_KEY` their proofs,
/// once, so that from then on the worker applies only rows that carry a valid one
/// (``ProvenRowHandler``) and nothing about a row's id exempts it.
///
/// Run by `worker run` at start, before anything is applied. The rows given a proof are those
/// without one at or below the cutover recorded then (`event_proof_cutover`) — all of them when
/// the key is first set; on an upgrade from a version that compared ids, those stored before it —
/// and only those a worker would have applied or already did: `done` and `discarded` rows (what a
/// rebuild reads), and `pending` or `running` rows already due. A row ingest's credential could
/// have planted before the upgrade to wait — `dead` for someone to replay it, or scheduled far
/// ahead — is not proven: it is counted in the log, and never applied.
///
/// In batches, each committed with its high-water mark (`proofs_backfilled_through`), so a worker
/// stopped midway resumes where it was; the batch holds the cutover's row, so two workers starting
/// together take turns; `proofs_backfilled_at` marks the end.
enum ProofBackfill {
    /// Rows read and proven per transaction.
    static let batchSize = 500

    /// - Returns: how many rows were given a proof (0 once done).
    @discardableResult
    static func run(client: PostgresClient, proof: EventProof, logger: Logger) async throws -> Int {
        try await client.query(
            """
            INSERT INTO event_proof_cutover (id, last_unproven_id)
            SELECT 1, coalesce(max(id), 0) FROM events ON CONFLICT (id) DO NOTHING
            """, logger: logger)
        var proven = 0
        while let batch = try await client.withTransaction(logger: logger, { try await proveNextBatch($0, proof: proof, logger: logger) }) {
            proven += batch
        }
        if proven > 0 { logger.notice("stored rows given their proofs (EVENT_SIGNING_KEY)", metadata: ["rows": "\(proven)"]) }
        return proven
    }

    /// Proves the next batch under the cutover row's lock; `nil` when there was none left (and
    /// the backfill is marked done).
    private static func proveNextBatch(_ connection: PostgresConnection, proof: EventProof, logger: Logger) async throws -> Int? {
        var cutover: (lastUnproven: Int64, through: Int64, done: Bool)?
        for try await row in try await connection.query(
            """
            SELECT last_unproven_id, proofs_backfilled_through, proofs_backfilled_at IS NOT NULL
            FROM event_proof_cutover WHERE id = 1 FOR UPDATE
            """, logger: logger
        ).decode((Int64, Int64, Bool).self) {
            cutover = row
        }
        guard let cutover, !cutover.done else { return nil }
        var ids: [Int64] = []
        var proofs: [String] = []
        for try await (id, source, externalID, type, origin, payload) in try await connection.query(
            """
            SELECT id, source, external_id, type, origin, payload FROM events
            WHERE proof IS NULL AND id > \(cutover.through) AND id <= \(cutover.lastUnproven)
                AND (state IN ('done', 'discarded') OR (state IN ('pending', 'running') AND run_at <= now()))
            ORDER BY id LIMIT \(batchSize)
            """, logger: logger
        ).decode((Int64, String, String, String, String, ByteBuffer).self) {
            ids.append(id)
            let bytes = proof.proof(source: source, externalID: externalID, type: type, origin: origin, payload: payload)
            proofs.append(bytes.map { String(format: "%02x", $0) }.joined())
        }
        guard let last = ids.last else {
            var left: Int64 = 0
            for try await count in try await connection.query(
                "SELECT count(*) FROM events WHERE proof IS NULL AND id <= \(cutover.lastUnproven)", logger: logger
            ).decode(Int64.self) {
                left = count
            }
            if left > 0 {
                logger.warning("stored rows left without a proof: dead or scheduled ahead before EVENT_SIGNING_KEY, they are never applied", metadata: [
                    "rows": "\(left)"])
            }
            try await connection.query("UPDATE event_proof_cutover SET proofs_backfilled_at = now() WHERE id = 1", logger: logger)
            return nil
        }
        try await connection.query(
            """
            UPDATE events e SET proof = decode(p.proof, 'hex') FROM unnest(\(ids)::bigint[], \(proofs)::text[]) AS p(id, proof)
            WHERE e.id = p.id
            """, logger: logger)
        try await connection.query("UPDATE event_proof_cutover SET proofs_backfilled_through = \(last) WHERE id = 1", logger: logger)
        return ids.count
    }
}
