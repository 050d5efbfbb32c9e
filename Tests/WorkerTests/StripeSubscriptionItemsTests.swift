// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing
import TestSupport

@testable import Worker
import PostgresNIO

/// A subscription billing several products (Stripe's multiple-products subscriptions: one invoice,
/// one payment per period) grants each product, and its refund ends them all — through the real
/// path, on a real PostgreSQL.
@Suite(.timeLimit(.minutes(2)))
struct StripeSubscriptionItemsTests {
    static func subscription(items: [[String: Any]], periodEnd: Date) -> [String: Any] {
        var object = StripeObjects.subscription("sub_multi", user: "user_items", product: "pro.monthly", periodEnd: periodEnd)
        object["items"] = ["object": "list", "data": items]
        return object
    }

    static var base: [String: Any] { ["id": "si_1", "price": ["id": "price_1", "product": "prod_pro"]] }
    static var storage: [String: Any] { ["id": "si_2", "price": ["id": "price_2", "product": "prod_storage", "lookup_key": "addon.storage"]] }

    @Test func eachItemIsAnEntitlementAndARefundEndsThemAll() async throws {
        let start = Date().addingTimeInterval(-3_600).rounded
        let periodEnd = start.addingTimeInterval(30 * 86_400)
        try await SystemHarness.run { system in
            try await system.stripe("customer.subscription.created", Self.subscription(items: [Self.base, Self.storage], periodEnd: periodEnd), at: start)
            var invoice = StripeObjects.invoice("in_multi", subscription: "sub_multi", reason: "subscription_create", periodEnd: periodEnd, charge: "ch_multi")
            invoice["subtotal"] = 999
            try await system.stripe("invoice.paid", invoice, at: start.addingTimeInterval(1))
            try await system.drain()

            let granted = try await system.entitlements(userID: "user_items")
            #expect(Set(granted.compactMap { $0["product_id"] as? String }) == ["pro.monthly", "addon.storage"])
            #expect(granted.allSatisfy { $0["is_active"] as? Bool == true && $0["expires_at"] as? String == rfc3339(periodEnd) })

            var charge = StripeObjects.charge("ch_multi", paymentIntent: "pi_in_multi", amount: 999)
            charge["invoice"] = "in_multi"
            try await system.stripe("charge.refunded", charge, at: start.addingTimeInterval(60))
            try await system.drain()
            let refunded = try await system.entitlements(userID: "user_items")
            #expect(refunded.count == 2)
            #expect(refunded.allSatisfy { $0["status"] as? String == "refunded" && $0["is_active"] as? Bool == false })
            let key = "user_items"
            #expect(try await system.db.scalar(
                "SELECT count(*) FROM outgoing_events WHERE user_id = \(key) AND type = 'entitlement.refunded'") == 2)

            // A rebuild by user rebuilds the item's entitlement with its subscription, never deletes it.
            let rebuild = try await RebuildTests.rebuild(system, "--user", "user_items")
            #expect(rebuild.status == 0, "\(rebuild.stderr)")
            let rebuilt = try await system.entitlements(userID: "user_items")
            #expect(Set(rebuilt.compactMap { $0["product_id"] as? String }) == ["pro.monthly", "addon.storage"], "\(rebuild.stdout)")
            #expect(rebuilt.allSatisfy { $0["status"] as? String == "refunded" })
        }
    }

    @Test func anItemRemovedExpiresWhileTheSubscriptionGoesOn() async throws {
        let start = Date().addingTimeInterval(-3_600).rounded
        let periodEnd = start.addingTimeInterval(30 * 86_400)
        try await SystemHarness.run { system in
            try await system.stripe("customer.subscription.created", Self.subscription(items: [Self.base, Self.storage], periodEnd: periodEnd), at: start)
            try await system.stripe(
                "customer.subscription.updated", Self.subscription(items: [Self.base], periodEnd: periodEnd), at: start.addingTimeInterval(10),
                previousAttributes: ["items": ["object": "list", "data": [Self.base, Self.storage]]])
            try await system.drain()
            // The next renewal extends the subscription, not the item removed from it.
            var renewal = StripeObjects.invoice("in_renew", subscription: "sub_multi", reason: "subscription_cycle", periodEnd: periodEnd.addingTimeInterval(30 * 86_400))
            renewal["subtotal"] = 999
            try await system.stripe("invoice.paid", renewal, at: start.addingTimeInterval(20))
            try await system.drain()
            let entitlements = try await system.entitlements(userID: "user_items")
            let byProduct = Dictionary(uniqueKeysWithValues: entitlements.map { ($0["product_id"] as? String ?? "?", $0) })
            #expect(byProduct["pro.monthly"]?["status"] as? String == "active")
            #expect(byProduct["addon.storage"]?["status"] as? String == "expired")
            #expect(byProduct["addon.storage"]?["is_active"] as? Bool == false)
        }
    }
}
