// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import NIOCore
import Shared
import Testing
import TestSupport
import HTTPTypes
import HummingbirdTesting
import NIOFoundationCompat
import PostgresNIO

/// One test per Apple row of docs/TRANSITIONS.md: a signed notification posted to ingest, applied by
/// the worker, read back through the read API.
@Suite(.timeLimit(.minutes(3)))
struct AppleTransitionTests {
    static func user() -> String { UUID().uuidString.lowercased() }
    static let start = Date().addingTimeInterval(-3_600).rounded
    static func at(_ minutes: Double) -> Date { start.addingTimeInterval(minutes * 60) }

    @Test func subscribedCreatesAnActiveEntitlementAndTransaction() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            let tx = subscription("1001", user: user.uppercased(), purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, renewal: .init(originalTransactionId: "1001"), at: Self.at(0))
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "active")
            #expect(e["is_active"] as? Bool == true)
            #expect(e["will_renew"] as? Bool == true)
            #expect(e["product_type"] as? String == "auto_renewable")
            #expect(e["source"] as? String == "store_kit")
            #expect(e["expires_at"] as? String == rfc3339(Date(timeIntervalSince1970: Double(tx.expiresDate!) / 1000)))
            #expect(e["cancelled_at"] is NSNull)
            let t = try await system.transactions(userID: user)
            #expect(t.count == 1)
            #expect(t.first?["status"] as? String == "succeeded")
            #expect(t.first?["provider_transaction_id"] as? String == "1001")
            #expect(t.first?["amount"] as? Int == 999)
        }
    }

    @Test func anIntroductoryFreeTrialIsTrialing() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            var tx = subscription("1002", user: user, purchased: Self.at(0), expires: Self.at(0).addingTimeInterval(7 * 86_400))
            tx.offerType = 1
            tx.offerDiscountType = "FREE_TRIAL"
            tx.price = 0
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "trialing")
            #expect(e["is_trial"] as? Bool == true)
            #expect(e["trial_ends_at"] as? String == e["expires_at"] as? String)
            #expect(e["is_active"] as? Bool == true)
        }
    }

    @Test(arguments: [("Consumable", "consumable"), ("Non-Consumable", "non_consumable"), ("Non-Renewing Subscription", "non_renewing")])
    func oneTimeChargeGrantsTheProduct(appleType: String, productType: String) async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            var tx = SampleAppleTransaction(transactionId: "1003", bundleId: TestCredentials.bundleID, productId: "coins.100", type: appleType, appAccountToken: user)
            tx.expiresDate = nil
            try await system.notify("ONE_TIME_CHARGE", transaction: tx)
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["product_type"] as? String == productType)
            #expect(e["status"] as? String == "active")
            #expect(e["is_active"] as? Bool == true)
            #expect(try await system.transactions(userID: user).count == 1)
        }
    }

    @Test func didRenewAddsATransactionAndExtendsTheEntitlement() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("2001", user: user, purchased: Self.at(0)), at: Self.at(0))
            var renewal = subscription("2002", user: user, purchased: Self.at(10), expires: Self.at(10).addingTimeInterval(60 * 86_400))
            renewal.originalTransactionId = "2001"
            try await system.notify("DID_RENEW", transaction: renewal, at: Self.at(10))
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["expires_at"] as? String == rfc3339(Date(timeIntervalSince1970: Double(renewal.expiresDate!) / 1000)))
            #expect(e["status"] as? String == "active")
            let t = try await system.transactions(userID: user)
            #expect(t.map { $0["provider_transaction_id"] as? String } == ["2002", "2001"])
        }
    }

    @Test func autoRenewDisabledIsCancelledButActiveUntilExpiryThenEnabledAgain() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            let tx = subscription("3001", user: user, purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
            try await system.notify("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", transaction: tx,
                                    renewal: .init(originalTransactionId: "3001", autoRenewStatus: 0), at: Self.at(5))
            try await system.drain()
            var e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "cancelled")
            #expect(e["is_active"] as? Bool == true)
            #expect(e["will_renew"] as? Bool == false)
            #expect(e["cancelled_at"] as? String == rfc3339(Self.at(5)))
            try await system.notify("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", transaction: tx, at: Self.at(6))
            try await system.drain()
            e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "active")
            #expect(e["will_renew"] as? Bool == true)
            #expect(e["cancelled_at"] is NSNull)
        }
    }

    @Test func aRenewalPreferenceTakesEffectAtTheNextRenewal() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            let tx = subscription("4001", user: user, purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
            try await system.notify("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", transaction: tx,
                                    renewal: .init(originalTransactionId: "4001", productId: "pro.monthly", autoRenewProductId: "basic.monthly"), at: Self.at(1))
            try await system.drain()
            #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE pending_product_id = 'basic.monthly' AND product_id = 'pro.monthly'") == 1)
            var renewal = subscription("4002", user: user, product: "basic.monthly", purchased: Self.at(20))
            renewal.originalTransactionId = "4001"
            try await system.notify("DID_RENEW", transaction: renewal, at: Self.at(20))
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["product_id"] as? String == "basic.monthly")
            #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE pending_product_id IS NULL") == 1)
        }
    }

    @Test func failingToRenewInAGracePeriodStaysActiveUntilItExpires() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            let tx = subscription("5001", user: user, purchased: Self.at(0))
            var renewal = SampleAppleRenewalInfo(originalTransactionId: "5001")
            renewal.gracePeriodExpiresDate = Self.at(0).addingTimeInterval(40 * 86_400).millisecondsSince1970
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
            try await system.notify("DID_FAIL_TO_RENEW", "GRACE_PERIOD", transaction: tx, renewal: renewal, at: Self.at(1))
            try await system.drain()
            var e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "grace_period")
            #expect(e["is_active"] as? Bool == true)
            try await system.notify("GRACE_PERIOD_EXPIRED", transaction: tx, at: Self.at(2))
            try await system.drain()
            e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "past_due")
            #expect(e["is_active"] as? Bool == false)
            // Recovering: a renewal brings it back.
            var renewed = subscription("5002", user: user, purchased: Self.at(3))
            renewed.originalTransactionId = "5001"
            try await system.notify("DID_RENEW", "BILLING_RECOVERY", transaction: renewed, at: Self.at(3))
            try await system.drain()
            e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "active")
        }
    }

    @Test func failingToRenewWithoutGraceIsPastDue() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            let tx = subscription("5101", user: user, purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
            try await system.notify("DID_FAIL_TO_RENEW", transaction: tx, at: Self.at(1))
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "past_due")
            #expect(e["is_active"] as? Bool == false)
        }
    }

    @Test(arguments: ["VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE"])
    func expiredIsInactive(subtype: String) async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            let tx = subscription("6001", user: user, purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
            try await system.notify("EXPIRED", subtype, transaction: tx, at: Self.at(1))
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "expired")
            #expect(e["is_active"] as? Bool == false)
            #expect(e["will_renew"] as? Bool == false)
        }
    }

    @Test func refundRefundsTheTransactionAndEntitlementThenReversalRestoresIt() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            var tx = subscription("7001", user: user, purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
            tx.revocationDate = Self.at(2).millisecondsSince1970
            tx.revocationReason = 0
            try await system.notify("REFUND", transaction: tx, at: Self.at(2))
            try await system.drain()
            var e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "refunded")
            #expect(e["is_active"] as? Bool == false)
            var t = try await system.transactions(userID: user)
            #expect(t.first?["status"] as? String == "refunded")
            #expect(t.first?["refunded_at"] as? String == rfc3339(Self.at(2)))
            #expect(try await system.db.scalar("SELECT count(*) FROM transaction_status_history") == 2)

            tx.revocationDate = nil
            try await system.notify("REFUND_REVERSED", transaction: tx, at: Self.at(3))
            try await system.drain()
            e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "active")
            t = try await system.transactions(userID: user)
            #expect(t.first?["status"] as? String == "succeeded")
        }
    }

    /// REFUND carries the refunded transaction, not the newest: refunding an earlier period after
    /// a renewal into another plan marks that payment only; refunding the current one ends access.
    @Test func aRefundOfAnEarlierPeriodLeavesTheCurrentOne() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            var first = subscription("7201", user: user, product: "pro.monthly", purchased: Self.at(0))
            var renewal = subscription("7202", user: user, product: "pro.quarterly", purchased: Self.at(1),
                                       expires: Self.at(1).addingTimeInterval(90 * 86_400))
            renewal.originalTransactionId = "7201"
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: first, at: Self.at(0))
            try await system.notify("DID_RENEW", transaction: renewal, at: Self.at(1))
            first.revocationDate = Self.at(2).millisecondsSince1970
            first.revocationReason = 0
            try await system.notify("REFUND", transaction: first, at: Self.at(2))
            try await system.drain()
            var e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "active")
            #expect(e["is_active"] as? Bool == true)
            #expect(e["product_id"] as? String == "pro.quarterly")
            #expect(e["expires_at"] as? String == rfc3339(Date(timeIntervalSince1970: Double(renewal.expiresDate!) / 1000)))
            var t = try await system.transactions(userID: user)
            #expect(t.map { $0["provider_transaction_id"] as? String } == ["7202", "7201"])
            #expect(t.map { $0["status"] as? String } == ["succeeded", "refunded"])

            renewal.revocationDate = Self.at(3).millisecondsSince1970
            renewal.revocationReason = 1
            try await system.notify("REFUND", transaction: renewal, at: Self.at(3))
            try await system.drain()
            e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "refunded")
            #expect(e["is_active"] as? Bool == false)
            #expect(e["product_id"] as? String == "pro.quarterly")
            t = try await system.transactions(userID: user)
            #expect(t.map { $0["status"] as? String } == ["refunded", "refunded"])
        }
    }

    @Test func aRefundDeclinedIsRecordedOnly() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            let tx = subscription("7101", user: user, purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
            try await system.notify("REFUND_DECLINED", transaction: tx, at: Self.at(1))
            try await system.drain()
            #expect(try await system.entitlement(userID: user)["status"] as? String == "active")
            #expect(try await system.outcomes() == ["applied", "recorded"])
        }
    }

    @Test func revokeIsRevokedAndInactive() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            var tx = subscription("8001", user: user, purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
            tx.revocationDate = Self.at(1).millisecondsSince1970
            try await system.notify("REVOKE", transaction: tx, at: Self.at(1))
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "revoked")
            #expect(e["is_active"] as? Bool == false)
        }
    }

    @Test func aRevokedTransactionNeverGrantsAccessWhateverTheNotificationSays() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            var tx = subscription("8101", user: user, purchased: Self.at(0))
            tx.revocationDate = Self.at(0).millisecondsSince1970
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "revoked")
            #expect(e["is_active"] as? Bool == false)
        }
    }

    @Test func renewalExtendedMovesTheExpiry() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            var tx = subscription("9001", user: user, purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
            let extended = Self.at(0).addingTimeInterval(45 * 86_400)
            tx.expiresDate = extended.millisecondsSince1970
            try await system.notify("RENEWAL_EXTENDED", transaction: tx, at: Self.at(1))
            try await system.drain()
            #expect(try await system.entitlement(userID: user)["expires_at"] as? String == rfc3339(extended))
        }
    }

    @Test func anOfferRedeemedIsRecordedOnTheEntitlement() async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            var tx = subscription("9101", user: user, purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
            tx.offerIdentifier = "spring.promo"
            tx.offerType = 2
            try await system.notify("OFFER_REDEEMED", "UPGRADE", transaction: tx, at: Self.at(1))
            try await system.drain()
            #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE offer = 'spring.promo'") == 1)
        }
    }

    @Test(arguments: ["CONSUMPTION_REQUEST", "RENEWAL_EXTENSION", "SOMETHING_NEW"])
    func otherNotificationsAreRecordedOnly(type: String) async throws {
        try await SystemHarness.run { system in
            let user = Self.user()
            let tx = subscription("9201", user: user, purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
            try await system.notify(type, transaction: tx, at: Self.at(1))
            try await system.drain()
            #expect(try await system.entitlement(userID: user)["status"] as? String == "active")
            #expect(try await system.outcomes() == ["applied", "recorded"])
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 2)
        }
    }

    @Test func aTestNotificationIsRecordedAndCompleted() async throws {
        try await SystemHarness.run { system in
            let body = try JSONEncoder().encode(["signedPayload": try system.signer.sign(SampleAppleNotification(type: "TEST", bundleId: TestCredentials.bundleID))])
            let response = try await system.client.execute(
                uri: "/v1/webhooks/appstore-notifications?sandbox=true", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(data: body))
            #expect(response.status == .ok)
            try await system.drain()
            #expect(try await system.outcomes() == ["recorded"])
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 1)
        }
    }

    @Test func aSyncedTransactionLinksTheUserForLaterNotifications() async throws {
        try await SystemHarness.run { system in
            // Notifications without appAccountToken first: kept under their originalTransactionId.
            let anonymous = subscription("9301", user: nil, purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: anonymous, at: Self.at(0))
            var firstRenewal = subscription("9302", user: nil, purchased: Self.at(5))
            firstRenewal.originalTransactionId = "9301"
            try await system.notify("DID_RENEW", transaction: firstRenewal, at: Self.at(5))
            try await system.drain()
            #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE user_id IS NULL AND entity_key = 'apple:sandbox:9301'") == 1)
            #expect(try await system.db.scalar("SELECT count(*) FROM transactions WHERE user_id IS NULL") == 2)
            // The app syncs the original purchase for its user: the entitlement and all its transactions now belong to them.
            var synced = anonymous
            synced.signedDate = Self.at(6).millisecondsSince1970
            try await system.sync(synced, userID: "user_9301")
            try await system.drain()
            var e = try await system.entitlement(userID: "user_9301")
            #expect(e["is_active"] as? Bool == true)
            #expect(try await system.transactions(userID: "user_9301").count == 2)
            // A later notification without a token finds the user through the link.
            var renewal = subscription("9303", user: nil, purchased: Self.at(10))
            renewal.originalTransactionId = "9301"
            try await system.notify("DID_RENEW", transaction: renewal, at: Self.at(10))
            try await system.drain()
            e = try await system.entitlement(userID: "user_9301")
            #expect(e["source"] as? String == "store_kit")
            #expect(try await system.transactions(userID: "user_9301").count == 3)
        }
    }
}
