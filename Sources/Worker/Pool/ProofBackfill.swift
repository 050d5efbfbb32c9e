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
/// without one at or below the cutover recorded then (`event_proof_cutover`): all of them when the
/// key is first set; on an upgrade from a version that compared ids, those stored before it. Done
/// once (`proofs_backfilled_at`), in one transaction that holds the cutover's row, so two workers
/// starting together do it once; ingest's role can write neither table's proof-related columns.
enum ProofBackfill {
    /// Rows read and proven per round trip.
    static let batchSize = 500

    /// - Returns: how many rows were given a proof (0 once done).
    @discardableResult
    static func run(client: PostgresClient, proof: EventProof, logger: Logger) async throws -> Int {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO event_proof_cutover (id, last_unproven_id)
                SELECT 1, coalesce(max(id), 0) FROM events ON CONFLICT (id) DO NOTHING
                """, logger: logger)
            var cutover: (lastUnproven: Int64, done: Bool)?
            for try await row in try await connection.query(
                "SELECT last_unproven_id, proofs_backfilled_at IS NOT NULL FROM event_proof_cutover WHERE id = 1 FOR UPDATE",
                logger: logger
            ).decode((Int64, Bool).self) {
                cutover = row
            }
            guard let cutover, !cutover.done else { return 0 }
            var proven = 0
            var after = Int64.min
            while true {
                var ids: [Int64] = []
                var proofs: [String] = []
                for try await (id, source, externalID, type, origin, payload) in try await connection.query(
                    """
                    SELECT id, source, external_id, type, origin, payload FROM events
                    WHERE proof IS NULL AND id <= \(cutover.lastUnproven) AND id > \(after) ORDER BY id LIMIT \(batchSize)
                    """, logger: logger
                ).decode((Int64, String, String, String, String, ByteBuffer).self) {
                    ids.append(id)
                    let bytes = proof.proof(source: source, externalID: externalID, type: type, origin: origin, payload: payload)
                    proofs.append(bytes.map { String(format: "%02x", $0) }.joined())
                }
                guard let last = ids.last else { break }
                try await connection.query(
                    """
                    UPDATE events e SET proof = decode(p.proof, 'hex') FROM unnest(\(ids)::bigint[], \(proofs)::text[]) AS p(id, proof)
                    WHERE e.id = p.id
                    """, logger: logger)
                proven += ids.count
                after = last
            }
            try await connection.query("UPDATE event_proof_cutover SET proofs_backfilled_at = now() WHERE id = 1", logger: logger)
            if proven > 0 {
                logger.notice("stored rows given their proofs (EVENT_SIGNING_KEY)", metadata: ["rows": "\(proven)"])
            }
            return proven
        }
    }
}
