// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import NIOCore
import Testing
import TestSupport
import HummingbirdTesting
import NIOFoundationCompat
import PostgresNIO
import Shared

/// How StoreKit syncs link purchases to users (docs/entitlements.md, "Linking users"): a link is
/// never stale, the signed `appAccountToken` decides, and a re-signed transaction is applied.
@Suite(.timeLimit(.minutes(3)))
struct StoreKitLinkingTests {
    static let start = Date().addingTimeInterval(-3_600).rounded
    static func at(_ minutes: Double) -> Date { start.addingTimeInterval(minutes * 60) }

    @Test func aSyncOlderThanTheNewestNotificationStillLinksItsUser() async throws {
        try await SystemHarness.run { system in
            let purchase = subscription("6001", user: nil, purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: purchase, at: Self.at(0))
            try await system.notify("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", transaction: purchase,
                                    renewal: .init(originalTransactionId: "6001", autoRenewStatus: 0), at: Self.at(10))
            try await system.drain()
            // The device's copy was signed before the newest notification.
            var synced = purchase
            synced.signedDate = Self.at(5).millisecondsSince1970
            try await system.sync(synced, userID: "user_6001")
            try await system.drain()
            let e = try await system.entitlement(userID: "user_6001")
            #expect(e["status"] as? String == "cancelled", "the late sync changes nothing but the user")
            #expect(try await system.transactions(userID: "user_6001").count == 1)
            #expect(try await system.outcomes() == ["applied", "applied", "stale"])
        }
    }

    @Test func aSyncNamingAnotherUserThanTheSignedTokenIsAConflict() async throws {
        try await SystemHarness.run { system in
            let token = "3c8e5f0a-2b7d-4e61-9a4c-5d3e2f1b0a98"
            let response = try await system.postSync(subscription("6101", user: token), userID: "someone_else")
            #expect(response.status == .conflict)
            #expect(String(buffer: response.body).contains("user_mismatch"))
            #expect(try await system.db.scalar("SELECT count(*) FROM events") == 0)
            // The token in another case is the same user.
            try await system.sync(subscription("6101", user: token), userID: token.uppercased())
            try await system.drain()
            #expect(try await system.entitlement(userID: token)["status"] as? String == "active")
        }
    }

    @Test func aReSignedTransactionIsAppliedAndTheSameSyncTwiceIsOne() async throws {
        try await SystemHarness.run { system in
            var purchase = subscription("6201", user: nil, purchased: Self.at(0))
            purchase.signedDate = Self.at(1).millisecondsSince1970
            try await system.sync(purchase, userID: "user_6201")
            let again = try await system.postSync(purchase, userID: "user_6201")
            #expect(again.status == .ok, "the same signed transaction for the same user is a duplicate")
            try await system.drain()
            #expect(try await system.entitlement(userID: "user_6201")["status"] as? String == "active")
            // Apple re-signs the transaction after refunding it; the app syncs it again.
            var refunded = purchase
            refunded.revocationDate = Self.at(20).millisecondsSince1970
            refunded.revocationReason = 0
            refunded.signedDate = Self.at(21).millisecondsSince1970
            try await system.sync(refunded, userID: "user_6201")
            try await system.drain()
            let e = try await system.entitlement(userID: "user_6201")
            #expect(e["status"] as? String == "refunded")
            #expect(e["is_active"] as? Bool == false)
            let history = try await system.transactions(userID: "user_6201")
            #expect(history.count == 1)
            #expect(history.first?["status"] as? String == "refunded")
        }
    }

    @Test func bothEnvironmentsSyncWithOrWithoutTheOldQueryParameter() async throws {
        try await SystemHarness.run { system in
            var production = subscription("6301", user: nil)
            production.environment = "Production"
            try await system.sync(production, userID: "user_6301")
            let body = try JSONEncoder().encode(["signed_transaction": try system.signer.sign(subscription("6302", user: nil)), "user_id": "user_6301"])
            let legacy = try await system.client.execute(
                uri: "/v1/iap/storekit-transactions?sandbox=true", method: .post,
                headers: [HTTPField.Name("X-Sluice-Key")!: TestCredentials.apiKey], body: ByteBuffer(data: body))
            #expect(legacy.status == .accepted)
            try await system.drain()
            let environments = try await system.entitlements(userID: "user_6301").compactMap { $0["environment"] as? String }
            #expect(environments.sorted() == ["production", "sandbox"])
        }
    }
}
