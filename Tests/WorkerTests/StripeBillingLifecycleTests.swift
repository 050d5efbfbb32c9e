// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport
import PostgresNIO

/// A Stripe Billing subscription as Stripe really sends it — bought through Checkout and renewed
/// twice, every event of it, in both API shapes, in order and shuffled — through ingest, the
/// worker and the read API.
@Suite(.timeLimit(.minutes(3)))
struct StripeBillingLifecycleTests {
    /// Shuffled events may wait for the event that links them: more attempts than the harness's three.
    static let worker = ["MAX_ATTEMPTS": "20"]

    @Test(arguments: StripeBillingTraffic.Shape.allCases, [false, true])
    func aCheckoutSubscriptionRenewedTwiceIsOneEntitlementAndThreePayments(shape: StripeBillingTraffic.Shape, shuffled: Bool) async throws {
        let traffic = StripeBillingTraffic(shape: shape)
        let inOrder = traffic.events(renewals: 2)
        let events = shuffled ? inOrder.shuffled() : inOrder
        try await SystemHarness.run(worker: Self.worker) { system in
            for event in events {
                try await system.stripe(
                    event.type, event.object, at: event.created, apiVersion: shape.rawValue, previousAttributes: event.previousAttributes)
            }
            try await system.drain(workers: shuffled ? 4 : 1)
            try await Self.expectThreePaidPeriods(system, traffic)

            // Refunding the second renewal's charge finds its payment through the charge's
            // PaymentIntent (basil) or invoice (earlier): that payment is refunded.
            let refund = traffic.refund(2)
            try await system.stripe(refund.type, refund.object, at: refund.created, apiVersion: shape.rawValue)
            try await system.drain()
            let transactions = try await system.transactions(userID: traffic.user)
            #expect(transactions.map { $0["status"] as? String } == ["refunded", "succeeded", "succeeded"])
            #expect(transactions.first?["amount_refunded"] as? Int == traffic.amount)
            // It paid for the period in force, so access ends with it.
            let e = try await system.entitlement(userID: traffic.user)
            #expect(e["status"] as? String == "refunded")
            #expect(e["is_active"] as? Bool == false)
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state <> 'done'") == 0)
        }
    }

    /// Refunding an earlier period's payment marks that payment and leaves the current period alone.
    @Test(arguments: StripeBillingTraffic.Shape.allCases)
    func refundingAnEarlierPeriodKeepsTheCurrentOne(shape: StripeBillingTraffic.Shape) async throws {
        let traffic = StripeBillingTraffic(shape: shape)
        try await SystemHarness.run(worker: Self.worker) { system in
            for event in traffic.events(renewals: 2) + [traffic.refund(1)] {
                try await system.stripe(
                    event.type, event.object, at: event.created, apiVersion: shape.rawValue, previousAttributes: event.previousAttributes)
            }
            try await system.drain()
            let transactions = try await system.transactions(userID: traffic.user)
            #expect(transactions.map { $0["status"] as? String } == ["succeeded", "refunded", "succeeded"])
            let e = try await system.entitlement(userID: traffic.user)
            #expect(e["status"] as? String == "active")
            #expect(e["expires_at"] as? String == rfc3339(traffic.periodEnd(2)))
        }
    }

    /// A subscription the platform sells outside the app, renewed and refunded: all recorded, no
    /// state, nothing retried or dead-lettered.
    @Test(arguments: StripeBillingTraffic.Shape.allCases)
    func aSubscriptionOutsideTheAppIsRecordedOnly(shape: StripeBillingTraffic.Shape) async throws {
        let traffic = StripeBillingTraffic(shape: shape, ownedByTheApp: false)
        try await SystemHarness.run(worker: Self.worker) { system in
            for event in traffic.events(renewals: 2) + [traffic.refund(2)] {
                try await system.stripe(
                    event.type, event.object, at: event.created, apiVersion: shape.rawValue, previousAttributes: event.previousAttributes)
            }
            try await system.drain()
            #expect(try await system.db.scalar("SELECT count(*) FROM entitlements") == 0)
            let transactions = try await system.db.strings("SELECT provider_transaction_id || ' ' || status FROM transactions")
            #expect(transactions == [])
            let waiting = try await system.db.strings("SELECT type || ' ' || coalesce(last_error, '') FROM events WHERE state <> 'done'")
            #expect(waiting == [])
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state <> 'done'") == 0)
            #expect(try await system.db.scalar("SELECT count(*) FROM queue_attempts") == 0)
            #expect(try await system.db.scalar(
                "SELECT count(*) FROM applied_events WHERE outcome = 'recorded' AND detail LIKE 'charge.refunded of payment %not the app''s'") == 1)
        }
    }

    static func expectThreePaidPeriods(_ system: SystemHarness, _ traffic: StripeBillingTraffic) async throws {
        let e = try await system.entitlement(userID: traffic.user)
        #expect(e["status"] as? String == "active")
        #expect(e["is_active"] as? Bool == true)
        #expect(e["product_id"] as? String == traffic.product)
        #expect(e["product_type"] as? String == "auto_renewable")
        #expect(e["expires_at"] as? String == rfc3339(traffic.periodEnd(2)))
        #expect(e["will_renew"] as? Bool == true)
        let transactions = try await system.transactions(userID: traffic.user)
        #expect(transactions.map { $0["provider_transaction_id"] as? String } == [traffic.invoice(2), traffic.invoice(1), traffic.invoice(0)])
        #expect(transactions.map { $0["status"] as? String } == ["succeeded", "succeeded", "succeeded"])
        #expect(transactions.map { $0["amount"] as? Int } == [traffic.amount, traffic.amount, traffic.amount])
        #expect(try await system.db.scalar("SELECT count(*) FROM transactions") == 3)
        #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'dead'") == 0)
        let retried = try await system.db.strings(
            "SELECT e.type || ': ' || a.error FROM queue_attempts a JOIN events e ON e.id = a.job_id ORDER BY a.id")
        #expect(retried.isEmpty, "no event needed a retry")
    }
}
