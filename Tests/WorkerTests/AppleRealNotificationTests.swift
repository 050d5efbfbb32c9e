// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import NIOCore
import Testing
import TestSupport
import HummingbirdTesting
import NIOFoundationCompat
import PostgresNIO

/// Real Apple-signed notifications (`vectors/apple/real/`, chained to Apple Root CA G3) through the
/// real ingest, handlers and read API.
@Suite(.timeLimit(.minutes(3)))
struct AppleRealNotificationTests {
    static let ingest = [
        "APPLE_ROOT_CERTIFICATES": Vectors.url("apple/real/AppleRootCA-G3.cer").path,
        "APPLE_BUNDLE_IDS": "com.loki-project.loki-messenger,com.nineton.taller",
        "APPLE_APP_APPLE_ID": "6450284872",
    ]

    static func post(_ system: SystemHarness, _ file: String, sandbox: Bool) async throws -> HTTPResponse.Status {
        let body = try JSONEncoder().encode(["signedPayload": try Vectors.text("apple/real/\(file)")])
        return try await system.client.execute(
            uri: "/v1/webhooks/appstore-notifications" + (sandbox ? "?sandbox=true" : ""), method: .post,
            headers: [.contentType: "application/json"], body: ByteBuffer(data: body)).status
    }

    @Test(.enabled(if: Vectors.exists("apple/real/assn-v2-DID_RENEW-sandbox-2025-10-01.jws"),
                   "the real Sandbox DID_RENEW comes from a repository without a license: read from SLUICE_EXTRA_VECTORS only"))
    func aRealSandboxRenewalBecomesSandboxStateAndARealSyncLinksItsUser() async throws {
        try await SystemHarness.run(ingest: Self.ingest) { system in
            #expect(try await Self.post(system, "assn-v2-DID_RENEW-sandbox-2025-10-01.jws", sandbox: true) == .ok)
            try await system.drain()
            #expect(try await system.db.strings(
                "SELECT entity_key || ' ' || environment || ' ' || status || ' ' || product_id || ' ' || extract(epoch FROM expires_at)::bigint FROM entitlements")
                == ["apple:sandbox:2000001024993299 sandbox active com.getsession.org.pro_sub 1759302732"])

            // The app syncs the same renewal, signed by Apple, for its user (no query parameter).
            let sync = try JSONEncoder().encode([
                "signed_transaction": try Vectors.text("apple/real/signedTransactionInfo-sandbox-2025-10-01.jws"), "user_id": "user_real",
            ])
            let response = try await system.client.execute(
                uri: "/v1/iap/storekit-transactions", method: .post,
                headers: [HTTPField.Name("X-Sluice-Key")!: TestCredentials.apiKey], body: ByteBuffer(data: sync))
            #expect(response.status == .accepted)
            try await system.drain()
            let e = try await system.entitlement(userID: "user_real")
            #expect(e["environment"] as? String == "sandbox")
            #expect(e["status"] as? String == "active")
            #expect(e["is_active"] as? Bool == false, "its five-minute Sandbox period ended in 2025")
            #expect(e["will_renew"] as? Bool == true)
            let history = try await system.transactions(userID: "user_real")
            #expect(history.count == 1)
            #expect(history.first?["amount"] as? Int == 199)
            #expect(history.first?["currency"] as? String == "AUD")
            #expect(try await system.entitlements(userID: "user_real", query: "&environment=production").isEmpty)
        }
    }

    @Test func aRealProductionTestNotificationIsRecorded() async throws {
        try await SystemHarness.run(ingest: Self.ingest) { system in
            #expect(try await Self.post(system, "assn-v2-TEST-production-2024-10-17.jws", sandbox: false) == .ok)
            #expect(try await Self.post(system, "assn-v2-TEST-production-2024-10-17.jws", sandbox: true) == .unauthorized)
            try await system.drain()
            #expect(try await system.outcomes() == ["recorded"])
        }
    }
}
