// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import NIOCore
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// A batch loads ahead only what rows carrying a valid proof name (``ProvenRowHandler``): a forged
/// row, or one without proof, chooses nothing the batch locks or loads.
@Suite(.timeLimit(.minutes(3)))
struct ProvenRowPrefetchTests {
    /// Names one link and one lock for any row, whatever its payload.
    struct NamesEverything: BatchableJobHandler {
        func applyAnnouncing(_ job: ClaimedJob, in store: StateStore) async throws -> AppliedEvent {
            AppliedEvent(outcome: .recorded, entityKey: nil, detail: nil)
        }
        func didCommit(_ job: ClaimedJob, _ applied: AppliedEvent) {}
        func linksToPrefetch(for job: ClaimedJob, in store: StateStore) -> [PrefetchedRows.LinkKey] {
            [.init(.stripeCustomer, "cus_\(job.id)", scope: "")]
        }
        func rowsToPrefetch(for job: ClaimedJob, in store: StateStore) async throws -> PrefetchedRows.Plan {
            PrefetchedRows.Plan(lockKeys: ["key_\(job.id)"])
        }
    }

    static func job(_ id: Int64, proof: String?) -> ClaimedJob {
        var attributes = ["external_id": "evt_\(id)", "type": "payment_intent.succeeded", "origin": "webhook"]
        attributes["proof"] = proof
        return ClaimedJob(id: id, queue: .events, kind: "stripe", attempt: 1, owner: "o", payload: ByteBuffer(string: "{}"), attributes: attributes)
    }

    @Test func onlyARowWithAValidProofHasItsReadsLoadedAhead() async throws {
        let key = try EventProof(secret: "proof-key-for-these-tests-only-0123456789")
        let handler = ProvenRowHandler(NamesEverything(), proof: key)
        let valid = key.proof(
            source: "stripe", externalID: "evt_1", type: "payment_intent.succeeded", origin: "webhook", payload: ByteBuffer(string: "{}"))
        let hex = "\\x" + valid.map { String(format: "%02x", $0) }.joined()
        let forged = "\\x" + String(repeating: "07", count: 32)
        try await TestDatabase.with { db in
            try await db.client.withConnection { connection in
                let store = StateStore(connection: connection, logger: TestDatabase.logger, prefetched: PrefetchedRows())
                #expect(handler.linksToPrefetch(for: Self.job(1, proof: hex), in: store).count == 1)
                let proven = try await handler.rowsToPrefetch(for: Self.job(1, proof: hex), in: store)
                #expect(proven.lockKeys == ["key_1"])
                for job in [Self.job(1, proof: forged), Self.job(1, proof: nil), Self.job(2, proof: hex)] {
                    #expect(handler.linksToPrefetch(for: job, in: store).isEmpty)
                    let plan = try await handler.rowsToPrefetch(for: job, in: store)
                    #expect(plan == .init())
                }
            }
        }
    }
}
