// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Testing
import TestSupport
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Shared

/// What Sluice knows of an entitlement reaches the read API, and the history pages with a cursor.
@Suite(.timeLimit(.minutes(3)))
struct ReadAPIFieldsTests {
    static let start = Date().addingTimeInterval(-3_600).rounded
    static func at(_ minutes: Double) -> Date { start.addingTimeInterval(minutes * 60) }

    @Test func anAppleSubscriptionShowsItsRenewalFields() async throws {
        try await SystemHarness.run { system in
            let user = "2d6b8f1c-0e4a-4c7b-9f3d-8a1e5c2b7d40"
            var purchase = subscription("7001", user: user, purchased: Self.at(0))
            purchase.inAppOwnershipType = "FAMILY_SHARED"
            purchase.offerType = 2
            purchase.offerIdentifier = "spring.half"
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: purchase, renewal: .init(originalTransactionId: "7001"), at: Self.at(0))
            var e = try await Self.read(system, user)
            #expect(e["ownership"] as? String == "family_shared")
            #expect((e["offer"] as? [String: String]) == ["type": "promotional", "id": "spring.half"])
            #expect(e["renews_into_product_id"] is NSNull)
            #expect(e["billing_issue_detected_at"] is NSNull)
            #expect(e["price_increase_status"] is NSNull)

            try await system.notify("DID_CHANGE_RENEWAL_PREF", "UPGRADE", transaction: purchase,
                                    renewal: .init(originalTransactionId: "7001", autoRenewProductId: "pro.yearly"), at: Self.at(1))
            var failing = SampleAppleRenewalInfo(originalTransactionId: "7001", autoRenewProductId: "pro.yearly")
            failing.isInBillingRetryPeriod = true
            let graceEnd = Date().addingTimeInterval(6 * 86_400).rounded
            failing.gracePeriodExpiresDate = graceEnd.millisecondsSince1970
            failing.priceIncreaseStatus = 0
            try await system.notify("DID_FAIL_TO_RENEW", "GRACE_PERIOD", transaction: purchase, renewal: failing, at: Self.at(2))
            e = try await Self.read(system, user)
            #expect(e["status"] as? String == "grace_period")
            #expect(e["renews_into_product_id"] as? String == "pro.yearly")
            #expect(e["grace_period_expires_at"] as? String == rfc3339(graceEnd))
            #expect(e["billing_issue_detected_at"] as? String == rfc3339(Self.at(2)))
            #expect(e["price_increase_status"] as? String == "pending")

            try await system.notify("EXPIRED", "BILLING_RETRY", transaction: purchase, at: Self.at(3))
            e = try await Self.read(system, user)
            #expect(e["expiration_reason"] as? String == "billing_error")
            #expect(e["will_renew"] as? Bool == false)
            #expect(e["is_active"] as? Bool == false)
        }
    }

    @Test func aOneTimePurchaseHasBooleansAndNulls() async throws {
        try await SystemHarness.run { system in
            let user = "9e7d5c3b-1a2f-4e6d-8c0b-7a5f3e1d9c24"
            var tx = SampleAppleTransaction(transactionId: "7101", bundleId: TestCredentials.bundleID, productId: "coins.100", type: "Consumable", appAccountToken: user)
            tx.expiresDate = nil
            try await system.notify("ONE_TIME_CHARGE", transaction: tx)
            let e = try await Self.read(system, user)
            #expect(e["will_renew"] as? Bool == false)
            #expect(e["is_trial"] as? Bool == false)
            #expect(e["is_active"] as? Bool == true)
            #expect(e["environment"] as? String == "sandbox")
            #expect(e["ownership"] as? String == "purchased")
            for field in ["expires_at", "cancelled_at", "grace_period_expires_at", "offer", "expiration_reason", "renews_into_product_id"] {
                #expect(e[field] is NSNull, "\(field)")
            }
        }
    }

    @Test func aStripeSubscriptionShowsItsBillingIssueAndWhyItEnded() async throws {
        try await SystemHarness.run { system in
            let end = Date().addingTimeInterval(20 * 86_400).rounded
            try await system.stripe("customer.subscription.updated", StripeObjects.subscription("sub_f", periodEnd: end), at: Self.at(0))
            try await system.stripe("customer.subscription.updated", StripeObjects.subscription("sub_f", status: "past_due", periodEnd: end), at: Self.at(1))
            var e = try await Self.read(system, "user_1")
            #expect(e["status"] as? String == "past_due")
            #expect(e["billing_issue_detected_at"] as? String == rfc3339(Self.at(1)))
            var ended = StripeObjects.subscription("sub_f", status: "canceled", periodEnd: end)
            ended["cancellation_details"] = ["reason": "payment_failed"]
            try await system.stripe("customer.subscription.deleted", ended, at: Self.at(2))
            e = try await Self.read(system, "user_1")
            #expect(e["status"] as? String == "expired")
            #expect(e["expiration_reason"] as? String == "billing_error")
            #expect(e["will_renew"] as? Bool == false)
        }
    }

    @Test func theHistoryPagesNewestFirstWithACursor() async throws {
        try await SystemHarness.run { system in
            let user = "5b3d1f9e-7c2a-4a8e-b6d0-1f4c7e9a2b53"
            for index in 0..<7 {
                var tx = SampleAppleTransaction(
                    transactionId: "71\(index)", bundleId: TestCredentials.bundleID, productId: "coins.\(index)", type: "Consumable",
                    purchaseDate: Self.at(Double(index)), appAccountToken: user)
                tx.expiresDate = nil
                try await system.notify("ONE_TIME_CHARGE", transaction: tx, at: Self.at(Double(index)))
            }
            try await system.drain()
            let everything = try await system.transactions(userID: user).compactMap { $0["provider_transaction_id"] as? String }
            #expect(everything == (0..<7).reversed().map { "71\($0)" })
            var pages: [[String]] = []
            var cursor = ""
            while true {
                let page = try await system.transactions(userID: user, limit: 3, query: cursor)
                guard let last = page.last?["id"] as? String else { break }
                pages.append(page.compactMap { $0["provider_transaction_id"] as? String })
                cursor = "&starting_after=\(last)"
            }
            #expect(pages.map(\.count) == [3, 3, 1])
            #expect(pages.flatMap { $0 } == everything)

            let bad = try await system.client.execute(
                uri: "/v1/iap/transaction-history?user_id=\(user)&starting_after=not-an-id", method: .get,
                headers: [.authorization: "Bearer \(TestCredentials.apiKey)"])
            #expect(bad.status == .badRequest)
            #expect(String(buffer: bad.body).contains("invalid_cursor"))
            let someoneElses = try await system.transactions(userID: "another_user", query: "&starting_after=\(UUID().uuidString)")
            #expect(someoneElses.isEmpty)
        }
    }

    /// Drains the queue and returns the only entitlement of `user`.
    static func read(_ system: SystemHarness, _ user: String) async throws -> [String: Any] {
        try await system.drain()
        return try await system.entitlement(userID: user)
    }
}
