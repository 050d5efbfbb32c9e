// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared
import Testing
import TestSupport

/// Ingest stores only what it verified, in one canonical form; the worker dispatches on the row's
/// `source`, `type` and `origin`, never on the shape of its payload.
@Suite(.timeLimit(.minutes(3)))
struct CanonicalStorageTests {
    static func storedPayloads(_ system: SystemHarness) async throws -> [String] {
        try await system.db.strings("SELECT convert_from(payload, 'UTF8') FROM events ORDER BY id")
    }

    @Test func aNotificationIsStoredAsItsSignedPayloadAlone() async throws {
        try await SystemHarness.run { system in
            let jws = try #require(try JSONSerialization.jsonObject(with: try system.signer.notificationBody(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: subscription("8001", user: nil))) as? [String: String])["signedPayload"]
            // Padding and keys beside signedPayload, which no signature covers.
            let padded = #"{ "note": "\#(String(repeating: "x", count: 5_000))", "signedPayload" : "\#(jws ?? "")" }"#
            let response = try await system.client.execute(
                uri: "/v1/webhooks/appstore-notifications?sandbox=true", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: padded))
            #expect(response.status == .ok)
            #expect(try await Self.storedPayloads(system) == [#"{"signedPayload":"\#(jws ?? "")"}"#])
        }
    }

    @Test func aSyncIsStoredAsItsTransactionAndNormalisedUser() async throws {
        try await SystemHarness.run { system in
            let token = "5E0C8B1A-7D2F-4A93-B6E4-1C9F0A2D3B47"
            let signed = try system.signer.sign(subscription("8101", user: token.lowercased()))
            let padded = #"{"user_id":"\#(token)","padding":"\#(String(repeating: "y", count: 5_000))","signed_transaction":"\#(signed)"}"#
            let headers: HTTPFields = [.contentType: "application/json", HTTPField.Name("X-Sluice-Key")!: TestCredentials.clientAPIKey]
            let first = try await system.client.execute(
                uri: "/v1/iap/storekit-transactions", method: .post, headers: headers, body: ByteBuffer(string: padded))
            #expect(first.status == .accepted)
            // The token in lowercase is the same user: the same sync, a duplicate.
            let lower = try JSONEncoder().encode(["signed_transaction": signed, "user_id": token.lowercased()])
            let second = try await system.client.execute(
                uri: "/v1/iap/storekit-transactions", method: .post, headers: headers, body: ByteBuffer(data: lower))
            #expect(second.status == .ok)
            #expect(try await Self.storedPayloads(system) == [#"{"signed_transaction":"\#(signed)","user_id":"\#(token.lowercased())"}"#])
        }
    }

    /// Rows no ingest stores this way: a status body under a notification's type, and a status
    /// type that is not the reconciliation's. Neither is applied as a reconciliation.
    @Test(arguments: [("DID_RENEW", "webhook"), ("SUBSCRIPTION_STATUS", "webhook")])
    func theWorkerGoesByTheRowsColumnsNotItsShape(type: String, origin: String) async throws {
        try await SystemHarness.run { system in
            let body = try JSONSerialization.data(withJSONObject: [
                "status": 1, "environment": "Sandbox", "signedTransactionInfo": try system.signer.sign(subscription("8201", user: "mallory")),
            ])
            try await system.db.client.query(
                """
                INSERT INTO events (source, external_id, type, environment, ordering_key, payload, origin)
                VALUES ('apple', 'forged-1', \(type), 'Sandbox', '8201', \(ByteBuffer(data: body)), \(origin))
                """, logger: TestDatabase.logger)
            try await system.drain()
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'dead'") == 1)
            #expect(try await system.entitlements(userID: "mallory", query: "&environment=all").isEmpty)
        }
    }
}
