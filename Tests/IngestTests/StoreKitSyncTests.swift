// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import Shared
import Testing
import TestSupport
import NIOFoundationCompat
import PostgresNIO

@Suite(.timeLimit(.minutes(3)))
struct StoreKitSyncTests {
    static func body(transactionID: String, userID: String = "user_42") throws -> Data {
        let jws = try IngestHarness.signer.sign(SampleAppleTransaction(transactionId: transactionID, bundleId: IngestHarness.bundleID))
        return try JSONEncoder().encode(["signed_transaction": jws, "user_id": userID])
    }

    static func post(_ client: any TestClientProtocol, _ body: Data, headers: HTTPFields) async throws -> TestResponse {
        try await client.execute(uri: "/v1/iap/storekit-transactions?sandbox=true", method: .post, headers: headers, body: ByteBuffer(data: body))
    }

    @Test func aSyncedTransactionIsAcceptedOnceThenADuplicate() async throws {
        try await IngestHarness.withIngest { client, db async throws in
            let body = try Self.body(transactionID: "2000000111")
            let first = try await Self.post(client, body, headers: [HTTPField.Name("X-Sluice-Key")!: IngestHarness.apiKey])
            #expect(first.status == .accepted)
            #expect(first.text == #"{"transaction_id":"2000000111"}"#)
            let again = try await Self.post(client, body, headers: [.authorization: "Bearer \(IngestHarness.apiKey)"])
            #expect(again.status == .ok)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE source = 'storekit' AND external_id LIKE '2000000111/%'") == 1)
        }
    }

    @Test(arguments: [nil, "wrong-key", ""])
    func aMissingOrUnknownKeyIsUnauthorized(key: String?) async throws {
        try await IngestHarness.withIngest { client, db async throws in
            var headers: HTTPFields = [:]
            if let key { headers[HTTPField.Name("X-Sluice-Key")!] = key }
            let response = try await Self.post(client, try Self.body(transactionID: "2000000222"), headers: headers)
            #expect(response.status == .unauthorized)
            #expect(response.errorCode == "unauthorized")
            #expect(try await db.eventCount() == 0)
        }
    }

    @Test func aForgedTransactionIsRefused() async throws {
        try await IngestHarness.withIngest { client, db async throws in
            let stranger = AppleJWSSigner(pki: try ApplePKI.generate(name: "Forger"))
            let jws = try stranger.sign(SampleAppleTransaction(transactionId: "2000000333", bundleId: IngestHarness.bundleID))
            let body = try JSONEncoder().encode(["signed_transaction": jws, "user_id": "user_1"])
            let response = try await Self.post(client, body, headers: [.authorization: "Bearer \(IngestHarness.apiKey)"])
            #expect(response.status == .unauthorized)
            #expect(response.errorCode == "untrusted_chain")
            #expect(try await db.eventCount() == 0)
        }
    }

    @Test func aBodyWithoutUserIsABadRequest() async throws {
        try await IngestHarness.withIngest { client, db async throws in
            let jws = try IngestHarness.signer.sign(SampleAppleTransaction(transactionId: "2000000444", bundleId: IngestHarness.bundleID))
            let body = try JSONEncoder().encode(["signed_transaction": jws])
            let response = try await Self.post(client, body, headers: [.authorization: "Bearer \(IngestHarness.apiKey)"])
            #expect(response.status == .badRequest)
            #expect(try await db.eventCount() == 0)
        }
    }
}
