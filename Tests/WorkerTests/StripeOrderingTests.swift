// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Shared
import Testing
import TestSupport

@testable import Worker

@Suite(.timeLimit(.minutes(3)))
struct StripeOrderingTests {
    /// 200 updates of one subscription, posted in random order and applied by 8 concurrent
    /// workers, end in the state of the newest one — what applying them in order gives.
    @Test func twoHundredUpdatesInRandomOrderWithEightWorkersEndAsInOrder() async throws {
        let start = Date().addingTimeInterval(-86_400).rounded
        let statuses = ["active", "past_due", "trialing", "paused", "unpaid", "active"]
        let updates = (0..<200).map { index -> (Date, [String: Any]) in
            let created = start.addingTimeInterval(Double(index))
            return (created, StripeObjects.subscription(
                "sub_many", status: statuses[index % statuses.count], periodEnd: created.addingTimeInterval(30 * 86_400),
                cancelAtPeriodEnd: index % 7 == 0))
        }
        // The reference: every decision in order, in memory.
        var reference: EntitlementState?
        for (index, (created, object)) in updates.enumerated() {
            let event = StripeEvent(
                eventID: Int64(index), id: "evt_\(index)", type: "customer.subscription.updated", created: created,
                object: try JSONDecoder().decode(JSONValue.self, from: JSONSerialization.data(withJSONObject: object)))
            let subject = StripeDecider.Subject(entitlementKey: StripeDecider.subscriptionKey("sub_many"), userID: "user_1", productID: "pro.monthly")
            reference = try StripeDecider.decide(event, subject, .init(entitlement: reference)).entitlements.first ?? reference
        }
        let expected = try #require(reference)
        let objects = try updates.map { ($0.0, try JSONSerialization.data(withJSONObject: $0.1)) }

        try await SystemHarness.run { system in
            for (created, object) in objects.shuffled() {
                let dictionary = try JSONSerialization.jsonObject(with: object) as! [String: Any]
                try await system.stripe("customer.subscription.updated", dictionary, at: created)
            }
            try await system.drain(workers: 8)
            let e = try await system.entitlement(userID: "user_1")
            #expect(e["status"] as? String == expected.status.rawValue)
            #expect(e["will_renew"] as? Bool == expected.willRenew)
            #expect(e["expires_at"] as? String == expected.expiresAt.map(rfc3339))
            #expect(try await system.db.scalar("SELECT count(*) FROM applied_events") == 200)
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state <> 'done'") == 0)
        }
    }
}

/// The Stripe decisions alone, without a database.
struct StripeDeciderTests {
    @Test func subscriptionStatusesMapAsTransitionsSay() throws {
        func status(_ stripe: String, cancelling: Bool = false) throws -> EntitlementStatus? {
            StripeDecider.subscriptionStatus(try JSONDecoder().decode(
                JSONValue.self, from: Data(#"{"status":"\#(stripe)","cancel_at_period_end":\#(cancelling)}"#.utf8)))
        }
        #expect(try status("active") == .active)
        #expect(try status("active", cancelling: true) == .cancelled)
        #expect(try status("trialing") == .trialing)
        #expect(try status("past_due") == .pastDue)
        #expect(try status("unpaid") == .pastDue)
        #expect(try status("paused") == .paused)
        #expect(try status("canceled") == .expired)
        #expect(try status("incomplete") == nil)
    }

    @Test func aPaymentWithoutUserIsUnlinked() throws {
        let event = StripeEvent(eventID: 1, id: "evt_1", type: "payment_intent.succeeded", created: Date(), object: .object(["id": .string("pi_1")]))
        let subject = StripeDecider.Subject(entitlementKey: StripeDecider.paymentKey("pi_1"), transactionKey: "pi_1", productID: "pro")
        #expect(throws: Unlinked.self) { try StripeDecider.decide(event, subject, .init()) }
    }

    @Test func aLateProcessingNeverUndoesASucceededPayment() throws {
        var succeeded = TransactionState(source: .webCheckout, providerTransactionID: "pi_1", status: .succeeded)
        succeeded.userID = "user_1"
        succeeded.lastEventTime = Date(timeIntervalSince1970: 100)
        let event = StripeEvent(eventID: 2, id: "evt_2", type: "payment_intent.processing", created: Date(timeIntervalSince1970: 100), object: .object([:]))
        let decision = try StripeDecider.decide(event, .init(transactionKey: "pi_1", userID: "user_1"), .init(transaction: succeeded))
        #expect(decision.outcome == .recorded)
        #expect(decision.transactions.isEmpty)
    }
}
