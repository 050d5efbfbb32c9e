// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Shared
import Testing
import TestSupport

@testable import Worker
import PostgresNIO

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
                eventID: Int64(index), id: "evt_\(index)", type: "customer.subscription.updated", created: created, livemode: false,
                object: try JSONValue.parse(JSONSerialization.data(withJSONObject: object)))
            let scope = StripeScope(account: nil, livemode: false)
            let subject = StripeDecider.Subject(
                scope: scope, entitlementKey: scope.subscriptionKey("sub_many"), userID: "user_1", productID: "pro.monthly", isKnown: true)
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
