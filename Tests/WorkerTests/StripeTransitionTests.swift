// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import NIOCore
import Shared
import Testing
import TestSupport
import HTTPTypes
import HummingbirdTesting
import PostgresNIO

/// One test per Stripe row of docs/TRANSITIONS.md: a signed event posted to ingest, applied by the
/// worker, read back through the read API.
@Suite(.timeLimit(.minutes(3)))
struct StripeTransitionTests {
    typealias O = StripeObjects
    static let start = Date().addingTimeInterval(-3_600).rounded
    static func at(_ minutes: Double) -> Date { start.addingTimeInterval(minutes * 60) }
    static let periodEnd = Date().addingTimeInterval(30 * 86_400).rounded
    static let user = "user_1"

    @Test func paymentIntentSucceededGrantsTheProduct() async throws {
        try await SystemHarness.run { system in
            try await system.stripe("payment_intent.succeeded", O.paymentIntent("pi_1", extra: ["product_type": "non_consumable"]))
            try await system.drain()
            let e = try await system.entitlement(userID: Self.user)
            #expect(e["status"] as? String == "active")
            #expect(e["is_active"] as? Bool == true)
            #expect(e["product_id"] as? String == "pro.lifetime")
            #expect(e["product_type"] as? String == "non_consumable")
            #expect(e["source"] as? String == "web_checkout")
            let t = try await system.transactions(userID: Self.user)
            #expect(t.count == 1)
            #expect(t.first?["status"] as? String == "succeeded")
            #expect(t.first?["amount"] as? Int == 4_999)
            #expect(t.first?["currency"] as? String == "EUR")
            #expect(t.first?["provider_transaction_id"] as? String == "pi_1")
        }
    }

    @Test func processingThenSucceededMovesTheTransaction() async throws {
        try await SystemHarness.run { system in
            try await system.stripe("payment_intent.processing", O.paymentIntent("pi_2", status: "processing"), at: Self.at(0))
            try await system.drain()
            #expect(try await system.transactions(userID: Self.user).first?["status"] as? String == "processing")
            #expect(try await system.entitlements(userID: Self.user).isEmpty)
            try await system.stripe("payment_intent.succeeded", O.paymentIntent("pi_2"), at: Self.at(1))
            try await system.drain()
            #expect(try await system.transactions(userID: Self.user).first?["status"] as? String == "succeeded")
            #expect(try await system.entitlement(userID: Self.user)["status"] as? String == "active")
            #expect(try await system.db.scalar("SELECT count(*) FROM transaction_status_history") == 2)
        }
    }

    @Test(arguments: [("payment_intent.payment_failed", "requires_payment_method"), ("payment_intent.canceled", "canceled")])
    func aFailedOrCanceledPaymentIsFailedWithoutEntitlement(type: String, status: String) async throws {
        try await SystemHarness.run { system in
            try await system.stripe(type, O.paymentIntent("pi_3", status: status))
            try await system.drain()
            #expect(try await system.transactions(userID: Self.user).first?["status"] as? String == "failed")
            #expect(try await system.entitlements(userID: Self.user).isEmpty)
        }
    }

    @Test func aPaidSubscriptionCheckoutLinksTheSubscription() async throws {
        try await SystemHarness.run { system in
            let subscription = O.subscription("sub_1", periodEnd: Self.periodEnd)
            try await system.stripe("checkout.session.completed",
                O.checkoutSession("cs_1", mode: "subscription", paymentStatus: "paid", paymentIntent: "pi_cs1", subscription: subscription), at: Self.at(0))
            try await system.drain()
            var e = try await system.entitlement(userID: Self.user)
            #expect(e["status"] as? String == "active")
            #expect(e["product_type"] as? String == "auto_renewable")
            #expect(e["expires_at"] as? String == rfc3339(Self.periodEnd))
            #expect(e["will_renew"] as? Bool == true)
            // The subscription's own events find the same entitlement, even without metadata.
            try await system.stripe("customer.subscription.updated",
                O.subscription("sub_1", user: nil, product: nil, periodEnd: Self.periodEnd, cancelAtPeriodEnd: true, canceledAt: Self.at(5)), at: Self.at(5))
            try await system.drain()
            e = try await system.entitlement(userID: Self.user)
            #expect(e["status"] as? String == "cancelled")
            #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE lower(email) = 'buyer@example.com'") == 1)
            let byEmail = try await system.client.execute(
                uri: "/v1/iap/entitlements?email=Buyer@Example.com", method: .get, headers: [.authorization: "Bearer \(TestCredentials.apiKey)"])
            #expect(String(buffer: byEmail.body).contains("\"status\":\"cancelled\""))
        }
    }

    @Test func aTrialCheckoutWithoutPaymentIsTrialingUntilTheCardIsSetUp() async throws {
        try await SystemHarness.run { system in
            let trialEnd = Date().addingTimeInterval(14 * 86_400).rounded
            let subscription = O.subscription("sub_t", status: "trialing", periodEnd: trialEnd, trialEnd: trialEnd)
            try await system.stripe("checkout.session.completed",
                O.checkoutSession("cs_t", mode: "subscription", paymentStatus: "no_payment_required", subscription: subscription, setupIntent: "seti_1"),
                at: Self.at(0))
            try await system.drain()
            var e = try await system.entitlement(userID: Self.user)
            #expect(e["status"] as? String == "trialing")
            #expect(e["is_trial"] as? Bool == true)
            #expect(e["trial_ends_at"] as? String == rfc3339(trialEnd))
            #expect(try await system.transactions(userID: Self.user).first?["status"] as? String == "pending")
            try await system.stripe("setup_intent.succeeded", ["id": "seti_1", "object": "setup_intent", "status": "succeeded", "customer": "cus_1"], at: Self.at(1))
            try await system.drain()
            e = try await system.entitlement(userID: Self.user)
            #expect(e["status"] as? String == "trialing")
            #expect(try await system.transactions(userID: Self.user).first?["status"] as? String == "succeeded")
        }
    }

    @Test func aFailedCardSetupFailsTheTrialTransaction() async throws {
        try await SystemHarness.run { system in
            let trialEnd = Date().addingTimeInterval(14 * 86_400).rounded
            let subscription = O.subscription("sub_tf", status: "trialing", periodEnd: trialEnd, trialEnd: trialEnd)
            try await system.stripe("checkout.session.completed",
                O.checkoutSession("cs_tf", mode: "subscription", paymentStatus: "no_payment_required", subscription: subscription, setupIntent: "seti_2"))
            try await system.stripe("setup_intent.setup_failed", ["id": "seti_2", "object": "setup_intent", "status": "requires_payment_method", "customer": "cus_1"])
            try await system.drain()
            #expect(try await system.transactions(userID: Self.user).first?["status"] as? String == "failed")
        }
    }

    @Test func anExpiredCheckoutFailsItsPendingTransaction() async throws {
        try await SystemHarness.run { system in
            try await system.stripe("checkout.session.completed",
                O.checkoutSession("cs_e", mode: "payment", paymentStatus: "unpaid", paymentIntent: "pi_e", product: "pro.lifetime"), at: Self.at(0))
            try await system.drain()
            #expect(try await system.transactions(userID: Self.user).first?["status"] as? String == "pending")
            try await system.stripe("checkout.session.expired",
                O.checkoutSession("cs_e", mode: "payment", paymentStatus: "unpaid", paymentIntent: "pi_e", product: "pro.lifetime"), at: Self.at(1))
            try await system.drain()
            #expect(try await system.transactions(userID: Self.user).first?["status"] as? String == "failed")
            #expect(try await system.entitlements(userID: Self.user).isEmpty)
        }
    }

    @Test func subscriptionUpdatesFollowTheSubscription() async throws {
        try await SystemHarness.run { system in
            let steps: [(status: String, cancel: Bool, expected: String, active: Bool)] = [
                ("active", false, "active", true), ("active", true, "cancelled", true), ("active", false, "active", true),
                ("past_due", false, "past_due", false), ("unpaid", false, "past_due", false), ("paused", false, "paused", false),
                ("active", false, "active", true),
            ]
            for (index, step) in steps.enumerated() {
                let end = Self.periodEnd.addingTimeInterval(Double(index) * 86_400)
                try await system.stripe("customer.subscription.updated",
                    O.subscription("sub_u", status: step.status, periodEnd: end, cancelAtPeriodEnd: step.cancel), at: Self.at(Double(index)))
                try await system.drain()
                let e = try await system.entitlement(userID: Self.user)
                #expect(e["status"] as? String == step.expected, "step \(index)")
                #expect(e["is_active"] as? Bool == step.active, "step \(index)")
                #expect(e["expires_at"] as? String == rfc3339(end), "step \(index)")
                #expect(e["will_renew"] as? Bool == !step.cancel, "step \(index)")
                #expect((e["cancelled_at"] is NSNull) == !step.cancel, "step \(index)")
            }
        }
    }

    @Test func deletedPausedAndResumed() async throws {
        try await SystemHarness.run { system in
            try await system.stripe("customer.subscription.updated", O.subscription("sub_d", periodEnd: Self.periodEnd), at: Self.at(0))
            try await system.stripe("customer.subscription.paused", O.subscription("sub_d", status: "paused", periodEnd: Self.periodEnd), at: Self.at(1))
            try await system.drain()
            #expect(try await system.entitlement(userID: Self.user)["status"] as? String == "paused")
            try await system.stripe("customer.subscription.resumed", O.subscription("sub_d", periodEnd: Self.periodEnd), at: Self.at(2))
            try await system.drain()
            #expect(try await system.entitlement(userID: Self.user)["status"] as? String == "active")
            try await system.stripe("customer.subscription.deleted", O.subscription("sub_d", status: "canceled", periodEnd: Self.periodEnd), at: Self.at(3))
            try await system.drain()
            let e = try await system.entitlement(userID: Self.user)
            #expect(e["status"] as? String == "expired")
            #expect(e["is_active"] as? Bool == false)
        }
    }

    @Test(arguments: ["customer.subscription.trial_will_end", "invoice.payment_failed", "invoice.voided", "charge.dispute.updated",
                      "some.future_event"])
    func recordedOnlyEvents(type: String) async throws {
        try await SystemHarness.run { system in
            try await system.stripe("customer.subscription.updated", O.subscription("sub_r", periodEnd: Self.periodEnd), at: Self.at(0))
            try await system.stripe(type, ["id": "obj_1", "object": "thing", "subscription": "sub_r"], at: Self.at(1))
            try await system.drain()
            #expect(try await system.entitlement(userID: Self.user)["status"] as? String == "active")
            #expect(try await system.outcomes() == ["applied", "recorded"])
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 2)
        }
    }

    /// The first invoice is the purchase's payment and each renewal its own: one ledger row each.
    @Test func aRenewalInvoiceAddsATransactionAndExtendsTheEntitlement() async throws {
        try await SystemHarness.run { system in
            try await system.stripe("customer.subscription.updated", O.subscription("sub_i", periodEnd: Self.periodEnd), at: Self.at(0))
            try await system.stripe("invoice.paid", O.invoice("in_0", subscription: "sub_i", reason: "subscription_create", periodEnd: Self.periodEnd), at: Self.at(1))
            let next = Self.periodEnd.addingTimeInterval(30 * 86_400)
            try await system.stripe("invoice.paid", O.invoice("in_1", subscription: "sub_i", reason: "subscription_cycle", periodEnd: next, charge: "ch_in1"), at: Self.at(2))
            try await system.drain()
            let e = try await system.entitlement(userID: Self.user)
            #expect(e["expires_at"] as? String == rfc3339(next))
            let t = try await system.transactions(userID: Self.user)
            #expect(t.map { $0["provider_transaction_id"] as? String } == ["in_1", "in_0"])
            #expect(t.map { $0["status"] as? String } == ["succeeded", "succeeded"])
            // Refunding the renewal's charge finds it through the invoice's link.
            try await system.stripe("charge.refunded", O.charge("ch_in1", paymentIntent: "pi_in_1", amount: 999), at: Self.at(3))
            try await system.drain()
            #expect(try await system.transactions(userID: Self.user).first?["status"] as? String == "refunded")
        }
    }

    @Test func aRefundRefundsTheTransactionAndTheEntitlement() async throws {
        try await SystemHarness.run { system in
            try await system.stripe("payment_intent.succeeded", O.paymentIntent("pi_r", charge: "ch_r"), at: Self.at(0))
            try await system.stripe("charge.refunded", O.charge("ch_r", paymentIntent: "pi_r"), at: Self.at(1))
            try await system.drain()
            let e = try await system.entitlement(userID: Self.user)
            #expect(e["status"] as? String == "refunded")
            #expect(e["is_active"] as? Bool == false)
            let t = try await system.transactions(userID: Self.user)
            #expect(t.first?["status"] as? String == "refunded")
            #expect(t.first?["refunded_at"] as? String == rfc3339(Self.at(1).rounded))
        }
    }

    @Test func aPartialRefundRecordsTheAmountAndKeepsTheStatus() async throws {
        try await SystemHarness.run { system in
            try await system.stripe("payment_intent.succeeded", O.paymentIntent("pi_p", charge: "ch_p"), at: Self.at(0))
            try await system.stripe("charge.refunded", O.charge("ch_p", paymentIntent: "pi_p", refunded: false), at: Self.at(1))
            try await system.drain()
            #expect(try await system.entitlement(userID: Self.user)["status"] as? String == "active")
            let t = try #require(try await system.transactions(userID: Self.user).first)
            #expect(t["status"] as? String == "succeeded")
            #expect(t["amount_refunded"] as? Int == 100)
            #expect(try await system.outcomes() == ["applied", "applied"])
        }
    }

    /// Stripe does not deliver in order: refunds of 300 and then 700 more (the second making it
    /// whole) delivered the other way round, and a partial one again after: `amount_refunded`
    /// never goes back down, and the payment stays refunded.
    @Test func refundsDeliveredOutOfOrderNeverLowerTheAmountRefunded() async throws {
        try await SystemHarness.run { system in
            try await system.stripe("payment_intent.succeeded", O.paymentIntent("pi_o", charge: "ch_o"), at: Self.at(0))
            try await system.stripe("charge.refunded", O.charge("ch_o", paymentIntent: "pi_o", refunded: false, amount: 1_000, amountRefunded: 300), at: Self.at(1))
            try await system.drain()
            try await system.stripe("charge.refunded", O.charge("ch_o", paymentIntent: "pi_o", refunded: false, amount: 1_000, amountRefunded: 600), at: Self.at(3))
            try await system.drain()
            try await system.stripe("charge.refunded", O.charge("ch_o", paymentIntent: "pi_o", refunded: false, amount: 1_000, amountRefunded: 300), at: Self.at(1))
            try await system.drain()
            var t = try #require(try await system.transactions(userID: Self.user).first)
            #expect(t["status"] as? String == "succeeded" && t["amount_refunded"] as? Int == 600, "\(t)")
            try await system.stripe("charge.refunded", O.charge("ch_o", paymentIntent: "pi_o", refunded: true, amount: 1_000, amountRefunded: 1_000), at: Self.at(5))
            try await system.drain()
            try await system.stripe("charge.refunded", O.charge("ch_o", paymentIntent: "pi_o", refunded: false, amount: 1_000, amountRefunded: 600), at: Self.at(3))
            try await system.drain()
            t = try #require(try await system.transactions(userID: Self.user).first)
            #expect(t["status"] as? String == "refunded" && t["amount_refunded"] as? Int == 1_000, "\(t)")
            #expect(try await system.entitlement(userID: Self.user)["is_active"] as? Bool == false)
        }
    }

    /// A cardholder disputes a payment already refunded in full (the refund not yet on their
    /// statement), and the merchant wins it: the payment stays refunded and the access off.
    @Test func aDisputeWonAfterAFullRefundLeavesItRefunded() async throws {
        try await SystemHarness.run { system in
            try await system.stripe("payment_intent.succeeded", O.paymentIntent("pi_rd", charge: "ch_rd"), at: Self.at(0))
            try await system.stripe("charge.refunded", O.charge("ch_rd", paymentIntent: "pi_rd"), at: Self.at(1))
            try await system.drain()
            try await system.stripe("charge.dispute.created", O.dispute("dp_rd", charge: "ch_rd", paymentIntent: "pi_rd"), at: Self.at(2))
            try await system.drain()
            try await system.stripe("charge.dispute.closed", O.dispute("dp_rd", charge: "ch_rd", paymentIntent: "pi_rd", status: "won"), at: Self.at(3))
            try await system.stripe("charge.dispute.funds_reinstated", O.dispute("dp_rd", charge: "ch_rd", paymentIntent: "pi_rd", status: "won"), at: Self.at(4))
            try await system.drain()
            let e = try await system.entitlement(userID: Self.user)
            #expect(e["status"] as? String == "refunded" && e["is_active"] as? Bool == false, "\(e)")
            #expect(try await system.transactions(userID: Self.user).first?["status"] as? String == "refunded")
        }
    }

    @Test func aDisputeRevokesUntilTheFundsAreReinstated() async throws {
        try await SystemHarness.run { system in
            try await system.stripe("payment_intent.succeeded", O.paymentIntent("pi_dp", charge: "ch_dp"), at: Self.at(0))
            try await system.stripe("charge.dispute.created", O.dispute("dp_1", charge: "ch_dp", paymentIntent: "pi_dp"), at: Self.at(1))
            try await system.drain()
            var e = try await system.entitlement(userID: Self.user)
            #expect(e["status"] as? String == "revoked")
            #expect(e["is_active"] as? Bool == false)
            #expect(try await system.transactions(userID: Self.user).first?["status"] as? String == "disputed")
            try await system.stripe("charge.dispute.closed", O.dispute("dp_1", charge: "ch_dp", paymentIntent: "pi_dp", status: "won"), at: Self.at(2))
            try await system.stripe("charge.dispute.funds_reinstated", O.dispute("dp_1", charge: "ch_dp", paymentIntent: "pi_dp", status: "won"), at: Self.at(3))
            try await system.drain()
            e = try await system.entitlement(userID: Self.user)
            #expect(e["status"] as? String == "active")
            #expect(try await system.transactions(userID: Self.user).first?["status"] as? String == "succeeded")
            #expect(try await system.db.scalar("SELECT count(*) FROM applied_events WHERE detail = 'dispute won'") == 1)
        }
    }

    @Test func aPlanChangeEndsTheOldSubscriptionsEntitlement() async throws {
        try await SystemHarness.run { system in
            try await system.stripe("customer.subscription.updated", O.subscription("sub_old", product: "basic.monthly", periodEnd: Self.periodEnd), at: Self.at(0))
            try await system.stripe("payment_intent.succeeded",
                O.paymentIntent("pi_up", product: "pro.monthly", extra: ["subscription_id": "sub_new", "replaces_subscription": "sub_old"]), at: Self.at(1))
            try await system.drain()
            let all = try await system.entitlements(userID: Self.user)
            #expect(all.count == 2)
            #expect(all.first { $0["product_id"] as? String == "basic.monthly" }?["status"] as? String == "expired")
            #expect(all.first { $0["product_id"] as? String == "pro.monthly" }?["status"] as? String == "active")
        }
    }

    @Test func deauthorizingAnAccountForgetsItsLinks() async throws {
        try await SystemHarness.run(worker: ["STRIPE_ACCOUNTS": "acct_1"]) { system in
            try await system.stripe("payment_intent.succeeded", O.paymentIntent("pi_acct"), account: "acct_1")
            try await system.drain()
            #expect(try await system.db.scalar("SELECT count(*) FROM provider_links WHERE account = 'acct_1'") > 0)
            try await system.stripe("account.application.deauthorized", ["id": "ca_1", "object": "application", "name": "app"], account: "acct_1")
            try await system.drain()
            #expect(try await system.db.scalar("SELECT count(*) FROM provider_links WHERE account = 'acct_1'") == 0)
            // The ledger and entitlements stay.
            #expect(try await system.entitlement(userID: Self.user)["status"] as? String == "active")
        }
    }

    @Test func aStaleSubscriptionUpdateChangesNothing() async throws {
        try await SystemHarness.run { system in
            try await system.stripe("customer.subscription.updated", O.subscription("sub_s", periodEnd: Self.periodEnd, cancelAtPeriodEnd: true), at: Self.at(10))
            try await system.drain()
            try await system.stripe("customer.subscription.updated", O.subscription("sub_s", status: "past_due", periodEnd: Self.periodEnd), at: Self.at(5))
            try await system.drain()
            #expect(try await system.entitlement(userID: Self.user)["status"] as? String == "cancelled")
            #expect(try await system.outcomes() == ["applied", "stale"])
        }
    }

    /// A refund whose payment is not known yet is retried, then dead-lettered as unlinked; once
    /// the payment arrives, replaying it applies it.
    @Test func anUnlinkedEventIsDeadLetteredThenAppliesOnReplay() async throws {
        try await SystemHarness.run { system in
            try await system.stripe("charge.refunded", O.charge("ch_late", paymentIntent: "pi_late"), at: Self.at(1))
            try await system.drain()
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'dead' AND last_error LIKE 'unlinked:%'") == 1)
            #expect(try await system.db.scalar("SELECT count(*) FROM queue_attempts WHERE error LIKE 'unlinked:%'") == 3)
            try await system.stripe("payment_intent.succeeded", O.paymentIntent("pi_late", charge: "ch_late"), at: Self.at(0))
            try await system.drain()
            // `worker dlq replay --all --source stripe`: back to pending, attempts reset.
            let replayed = try await DeadLetters(client: system.db.client, logger: TestDatabase.logger)
                .replayAll(DeadLetterFilter(source: .stripe), dryRun: false)
            #expect(replayed.replayed.count == 1)
            try await system.drain()
            #expect(try await system.entitlement(userID: Self.user)["status"] as? String == "refunded")
            #expect(try await system.transactions(userID: Self.user).first?["status"] as? String == "refunded")
        }
    }
}

extension Date {
    /// Whole seconds, as Stripe times are. The suites' start times are whole seconds too: a time
    /// within half a millisecond of the next second, sent as Apple's milliseconds, rounds into it,
    /// and an RFC 3339 time read back then names another second than the one sent.
    var rounded: Date { Date(timeIntervalSince1970: timeIntervalSince1970.rounded(.down)) }
}
