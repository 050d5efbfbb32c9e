// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// `EVENT_SIGNING_KEY`: with the ingest role's credentials alone, a row the worker applies cannot
/// be made; what ingest and recovery store is applied as before.
@Suite(.timeLimit(.minutes(3)))
struct EventProofSystemTests {
    static let key = ["EVENT_SIGNING_KEY": "proof-key-for-these-tests-only-0123456789"]

    /// A Stripe payment as the ingest role could insert it, straight into `events`; with `chosenID`,
    /// as only the schema's owner still can (`OVERRIDING SYSTEM VALUE`).
    static func insert(
        _ system: SystemHarness, id: String, user: String, proof: ByteBuffer?, chosenID: Int64? = nil, payloadOverride: Data? = nil
    ) async throws {
        let payload = try payloadOverride ?? SampleStripeEvents.event(
            id: id, type: "payment_intent.succeeded", object: StripeObjects.paymentIntent("pi_\(id)", user: user, product: "pro.lifetime"),
            livemode: true)
        if let chosenID {
            try await system.db.client.query(
                """
                INSERT INTO events (id, source, external_id, type, environment, ordering_key, payload, origin, proof) OVERRIDING SYSTEM VALUE
                VALUES (\(chosenID), 'stripe', \(id), 'payment_intent.succeeded', 'live', \("pi_\(id)"), \(ByteBuffer(data: payload)), 'webhook', \(proof))
                """, logger: TestDatabase.logger)
            return
        }
        try await system.db.client.query(
            """
            INSERT INTO events (source, external_id, type, environment, ordering_key, payload, origin, proof)
            VALUES ('stripe', \(id), 'payment_intent.succeeded', 'live', \("pi_\(id)"), \(ByteBuffer(data: payload)), 'webhook', \(proof))
            """, logger: TestDatabase.logger)
    }

    @Test func onlyRowsSluiceStoredAreApplied() async throws {
        try await SystemHarness.run(worker: Self.key, ingest: Self.key) { system in
            // Stored before the worker first ran with the key: no proof; given one at that start, once.
            try await Self.insert(system, id: "evt_before", user: "early", proof: nil)
            let proof = try EventProof(secret: Self.key["EVENT_SIGNING_KEY"]!)
            #expect(try await ProofBackfill.run(client: system.db.client, proof: proof, logger: TestDatabase.logger) == 1)
            #expect(try await ProofBackfill.run(client: system.db.client, proof: proof, logger: TestDatabase.logger) == 0, "once")
            // An id at or below the cutover exempts nothing any more (as the old id comparison did).
            try await Self.insert(system, id: "evt_low_id", user: "mallory", proof: nil, chosenID: -1)
            #expect(try await ProofBackfill.run(client: system.db.client, proof: proof, logger: TestDatabase.logger) == 0)
            // Through ingest: proven.
            try await system.stripe(
                "payment_intent.succeeded", StripeObjects.paymentIntent("pi_real", user: "honest", product: "pro.lifetime"), livemode: true)
            // Forged with the ingest role after the cutover: none, a wrong one, a real one on another payload.
            try await Self.insert(system, id: "evt_none", user: "mallory", proof: nil)
            try await Self.insert(system, id: "evt_junk", user: "mallory", proof: ByteBuffer(repeating: 7, count: 32))
            let realProof = try await system.db.client.query(
                "SELECT proof FROM events WHERE source = 'stripe' AND external_id <> 'evt_before' AND proof IS NOT NULL", logger: TestDatabase.logger
            ).collect().first?.decode(ByteBuffer.self)
            #expect(realProof?.readableBytes == 32)
            try await Self.insert(system, id: "evt_copied", user: "mallory", proof: realProof)
            try await system.drain()

            for user in ["early", "honest"] {
                #expect(try await system.entitlements(userID: user).count == 1, "\(user)")
            }
            #expect(try await system.entitlements(userID: "mallory").isEmpty)
            let dead = try await system.db.strings("SELECT external_id || ': ' || coalesce(last_error, '') FROM events WHERE state = 'dead' ORDER BY external_id")
            #expect(dead.count == 4)
            #expect(dead.allSatisfy { $0.contains("not stored by Sluice") }, "\(dead)")
        }
    }
}
