// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport
import PostgresNIO

/// Connected accounts and test mode never reach the platform's live state (`STRIPE_ACCOUNTS`).
@Suite(.timeLimit(.minutes(3)))
struct StripeAccountTests {
    typealias O = StripeObjects
    static let periodEnd = Date().addingTimeInterval(30 * 86_400).rounded

    /// The platform's live subscription of `user_1`, which the events below try to reach.
    static func platformSubscription(_ system: SystemHarness) async throws {
        try await system.stripe(
            "customer.subscription.updated", O.subscription("sub_live", periodEnd: periodEnd), at: Date().addingTimeInterval(-60), livemode: true)
        try await system.drain()
    }

    @Test func anUnlistedAccountChangesNothing() async throws {
        try await SystemHarness.run(worker: ["STRIPE_ACCOUNTS": "acct_listed"]) { system in
            try await Self.platformSubscription(system)
            // A grant to any user, and a plan change that would end the platform's subscription.
            try await system.stripe("payment_intent.succeeded",
                O.paymentIntent("pi_other", user: "user_2", extra: ["replaces_subscription": "sub_live"]), account: "acct_other", livemode: true)
            try await system.drain()
            #expect(try await system.entitlements(userID: "user_2").isEmpty)
            #expect(try await system.entitlement(userID: "user_1")["status"] as? String == "active")
            #expect(try await system.db.scalar("SELECT count(*) FROM provider_links WHERE account = 'acct_other'") == 0)
            #expect(try await system.db.scalar(
                "SELECT count(*) FROM applied_events WHERE outcome = 'recorded' AND detail LIKE 'ignored: connected account acct_other%'") == 1)
        }
    }

    @Test func aListedAccountChangesOnlyItsOwnState() async throws {
        try await SystemHarness.run(worker: ["STRIPE_ACCOUNTS": "acct_listed"]) { system in
            try await Self.platformSubscription(system)
            // Its metadata names the platform's subscription: as the account's own, it is another entitlement.
            try await system.stripe("payment_intent.succeeded",
                O.paymentIntent("pi_acct", user: "user_1", product: "pro.monthly",
                                extra: ["subscription_id": "sub_live", "replaces_subscription": "sub_live"]),
                account: "acct_listed", livemode: true)
            try await system.drain()
            let all = try await system.entitlements(userID: "user_1")
            #expect(all.count == 2)
            #expect(all.allSatisfy { $0["status"] as? String == "active" }, "\(all)")
            #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE entity_key = 'stripe:acct_listed:subscription:sub_live'") == 1)
            #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE entity_key = 'stripe:subscription:sub_live' AND status = 'active'") == 1)
        }
    }

    @Test func testModeKeepsToItsOwnState() async throws {
        try await SystemHarness.run { system in
            try await Self.platformSubscription(system)
            try await system.stripe("customer.subscription.deleted",
                O.subscription("sub_live", status: "canceled", periodEnd: Self.periodEnd), livemode: false)
            try await system.drain()
            #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE entity_key = 'stripe:subscription:sub_live' AND status = 'active'") == 1)
            #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE entity_key = 'stripe:test:subscription:sub_live' AND status = 'expired'") == 1)
        }
    }
}
