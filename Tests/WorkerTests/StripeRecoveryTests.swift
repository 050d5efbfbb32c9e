// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import DevSupport
import Foundation
import HTTPTypes
import NIOCore
import Shared
import Testing
import TestSupport

@testable import Worker
import PostgresNIO

/// Stripe events that never arrived, recovered from a local Stripe API stand-in, and a
/// subscription whose `customer.subscription.deleted` was lost, reconciled.
@Suite(.timeLimit(.minutes(3)))
struct StripeRecoveryTests {
    static let interval: Duration = .seconds(900)

    static func run(_ body: @Sendable @escaping (SystemHarness, StripeAPIStandIn, Recovery) async throws -> Void) async throws {
        try await StripeAPIStandIn.with { standIn in
            try await SystemHarness.withRecovery(standIn.workerEnvironment()) { system, recovery in
                try await body(system, standIn, recovery)
            }
        }
    }

    /// A test-mode event as `GET /v1/events` lists it.
    static func event(_ id: String, _ type: String, _ object: [String: Any], created: Date) -> [String: any Sendable] {
        let data = try! JSONSerialization.data(withJSONObject: [
            "id": id, "object": "event", "type": type, "created": Int(created.timeIntervalSince1970), "livemode": false,
            "api_version": "2025-03-31.basil", "pending_webhooks": 0, "data": ["object": object],
        ] as [String: Any])
        return try! JSONSerialization.jsonObject(with: data) as! [String: any Sendable]
    }

    @Test func eventsNeverDeliveredAreStoredAcrossPagesAndALateWebhookIsADuplicate() async throws {
        try await Self.run { system, standIn, recovery in
            for index in 0..<250 {
                standIn.add(event: Self.event(
                    "evt_rec_\(index)", "payment_intent.succeeded",
                    StripeObjects.paymentIntent("pi_rec_\(index)", user: "user_\(index)", product: "pro.lifetime"),
                    created: Date().addingTimeInterval(-Double(250 - index) * 10)))
            }
            standIn.misbehave { $0 == 1 ? 429 : nil }
            try await recovery.runCycle(owner: "w1", interval: Self.interval, logger: TestDatabase.logger)
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE source = 'stripe' AND origin = 'recovery'") == 250)
            let listed = standIn.requests.filter { $0.path == "/v1/events" }
            #expect(listed.count == 4, "one 429, then three pages of at most 100")
            #expect(listed.allSatisfy { $0.stripeVersion == "2025-03-31.basil" && $0.authorized })
            #expect(listed.last?.query.contains("starting_after=evt_rec_50") == true)
            try await system.drain()
            #expect(try await system.outcomes().filter { $0 == "applied" }.count == 250)
            #expect(try await system.entitlement(userID: "user_42")["environment"] as? String == "sandbox")

            // Stripe's retry of one of them gets through at last: one row, applied once.
            try await system.stripe(
                "payment_intent.succeeded", StripeObjects.paymentIntent("pi_rec_42", user: "user_42", product: "pro.lifetime"),
                id: "evt_rec_42", livemode: false)
            #expect(try await system.db.scalar("SELECT count(*) FROM events") == 250)
        }
    }

    @Test func aSubscriptionWhoseDeletedEventWasLostIsCorrected() async throws {
        try await Self.run { system, standIn, recovery in
            let ended = Date().addingTimeInterval(-10 * 86_400).rounded
            try await system.stripe(
                "customer.subscription.updated", StripeObjects.subscription("sub_lost", periodEnd: ended),
                at: Date().addingTimeInterval(-40 * 86_400))
            try await system.drain()
            #expect(try await system.entitlement(userID: "user_1")["status"] as? String == "active")
            var canceled = StripeObjects.subscription("sub_lost", status: "canceled", periodEnd: ended)
            canceled["cancellation_details"] = ["reason": "cancellation_requested"]
            standIn.setSubscription(try JSONSerialization.jsonObject(with: JSONSerialization.data(withJSONObject: canceled)) as! [String: any Sendable])

            try await recovery.runCycle(owner: "w1", interval: Self.interval, logger: TestDatabase.logger)
            #expect(standIn.requests.contains { $0.path == "/v1/subscriptions/sub_lost" })
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE origin = 'reconciliation' AND type = 'customer.subscription.deleted'") == 1)
            try await system.drain()
            let e = try await system.entitlement(userID: "user_1")
            #expect(e["status"] as? String == "expired")
            #expect(e["expiration_reason"] as? String == "voluntary")
        }
    }

    @Test func aWrongKeyIsAnErrorThatNamesNoKey() async throws {
        try await StripeAPIStandIn.with { standIn in
            try await HTTPClient.withHTTPClient { http in
                let api = StripeAPI(
                    call: ProviderCall(http: http, provider: "stripe"), apiKey: "rk_test_wrong", apiVersion: nil, baseURL: standIn.baseURL)
                do {
                    _ = try await api.events(createdSince: Date(), account: nil, startingAfter: nil, logger: TestDatabase.logger)
                    Issue.record("a refused key must throw")
                } catch let error as ProviderAPIError {
                    #expect(error.status == 401)
                    #expect(!error.description.contains("rk_test"))
                }
            }
        }
    }
}
