// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import NIOCore
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// Entitlement and transaction events, end to end: signed provider events through ingest, the
/// worker's handlers, the outbox and the forwarder, to real local endpoints, verified as a
/// receiver verifies Standard Webhooks.
@Suite(.timeLimit(.minutes(5)))
struct OutgoingEventsTests {
    static let start = Date().addingTimeInterval(-3_600).rounded
    static func at(_ minutes: Double) -> Date { start.addingTimeInterval(minutes * 60) }

    /// Adds an endpoint as `worker endpoints add` does; returns it with its secret.
    static func addEndpoint(
        _ system: SystemHarness, url: String, events: [String]? = nil, sources: [String]? = nil
    ) async throws -> (endpoint: Endpoint, secret: String) {
        let secret = Endpoint.newSecret()
        let store = EndpointStore(client: system.db.client, logger: TestDatabase.logger)
        let endpoint = try await store.add(url: url, changes: .init(eventTypes: events, sources: sources, allowPrivate: true), secret: secret)
        return (endpoint, secret)
    }

    /// The events an endpoint received, each verified with its secret(s), in arrival order.
    static func events(_ sink: HTTPSink, secret: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [[String: Any]] {
        try sink.received.map { received in
            let id = try #require(received.header("webhook-id"), sourceLocation: sourceLocation)
            let timestamp = try #require(received.header("webhook-timestamp").flatMap { Int64($0) }, sourceLocation: sourceLocation)
            let signature = try #require(received.header("webhook-signature"), sourceLocation: sourceLocation)
            #expect(StandardWebhooksReceiver.verifies(
                id: id, timestamp: timestamp, body: received.body, signatureHeader: signature, secret: secret), sourceLocation: sourceLocation)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(received.body)) as? [String: Any], sourceLocation: sourceLocation)
            #expect(body["id"] as? String == id, "webhook-id is the event's id", sourceLocation: sourceLocation)
            return body
        }
    }

    static func types(_ events: [[String: Any]]) -> [String] { events.compactMap { $0["type"] as? String } }

    static func entitlement(_ event: [String: Any]) -> [String: Any] {
        ((event["data"] as? [String: Any])?["entitlement"] as? [String: Any]) ?? [:]
    }

    @Test func anAppleSubscriptionsLifeIsAnnouncedInOrderAndDuplicatesAreSilent() async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run { system in
                let (_, secret) = try await Self.addEndpoint(system, url: sink.url)
                let user = UUID().uuidString.lowercased()
                let first = subscription("41001", user: user, purchased: Self.at(0))
                try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: first, at: Self.at(0))
                try await system.drain()
                // The same state again (a second copy of the notification, another UUID): nothing to announce.
                try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: first, at: Self.at(0.5))
                try await system.drain()
                try await system.notify("DID_FAIL_TO_RENEW", transaction: first, at: Self.at(1))
                try await system.drain()
                var renewal = subscription("41002", user: user, purchased: Self.at(2))
                renewal.originalTransactionId = "41001"
                try await system.notify("DID_RENEW", "BILLING_RECOVERY", transaction: renewal, at: Self.at(2))
                try await system.drain()
                renewal.revocationDate = Self.at(3).millisecondsSince1970
                renewal.revocationReason = 0
                try await system.notify("REFUND", transaction: renewal, at: Self.at(3))
                try await system.drain()
                try await system.forward()

                let events = try Self.events(sink, secret: secret)
                #expect(Self.types(events) == [
                    "entitlement.granted", "transaction.succeeded", "entitlement.billing_issue", "entitlement.recovered",
                    "transaction.succeeded", "entitlement.refunded", "transaction.refunded",
                ])
                let ofEntitlement = events.filter { ($0["type"] as? String)?.hasPrefix("entitlement.") == true }
                let sequences = ofEntitlement.compactMap { $0["sequence"] as? Int }
                #expect(sequences.count == 4 && sequences == sequences.sorted() && Set(sequences).count == 4, "\(sequences)")
                let granted = Self.entitlement(events[0])
                #expect(granted["user_id"] as? String == user)
                #expect(granted["is_active"] as? Bool == true)
                #expect(granted["environment"] as? String == "sandbox")
                #expect((events[0]["data"] as? [String: Any])?["previous"] is NSNull)
                let cause = try #require(events[0]["cause"] as? [String: Any])
                #expect(cause["provider"] as? String == "apple" && cause["event_type"] as? String == "SUBSCRIBED")
                #expect(cause["origin"] as? String == "webhook")
                let refunded = try #require(ofEntitlement.last)
                #expect(Self.entitlement(refunded)["is_active"] as? Bool == false)
                let previous = try #require((refunded["data"] as? [String: Any])?["previous"] as? [String: Any])
                #expect(previous["status"] as? String == "active" && previous["is_active"] as? Bool == true)
                // The read API shows exactly what the last event says.
                let read = try await system.entitlement(userID: user)
                #expect(read["status"] as? String == Self.entitlement(refunded)["status"] as? String)
                #expect(read["id"] as? String == Self.entitlement(refunded)["id"] as? String)
            }
        }
    }

    @Test func aStripeWebPurchaseAndItsRefundAreAnnouncedLikeApplesAndFiltersPickEach() async throws {
        try await HTTPSink.with { all in
            try await HTTPSink.with { refunds in
                try await SystemHarness.run { system in
                    let (_, allSecret) = try await Self.addEndpoint(system, url: all.url, sources: ["stripe"])
                    let (_, refundSecret) = try await Self.addEndpoint(system, url: refunds.url, events: ["transaction.refunded", "entitlement.refunded"])
                    try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_42", user: "web_user_42", charge: "ch_42"))
                    try await system.drain()
                    try await system.stripe("charge.refunded", StripeObjects.charge("ch_42", paymentIntent: "pi_42"))
                    try await system.drain()
                    // An Apple purchase: not for the Stripe-only endpoint.
                    try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("42001", user: UUID().uuidString.lowercased()))
                    try await system.drain()
                    try await system.forward()

                    let stripe = try Self.events(all, secret: allSecret)
                    #expect(Self.types(stripe) == ["entitlement.granted", "transaction.succeeded", "entitlement.refunded", "transaction.refunded"])
                    #expect(Self.entitlement(stripe[0])["user_id"] as? String == "web_user_42")
                    #expect(Self.entitlement(stripe[0])["source"] as? String == "web_checkout")
                    let transaction = try #require((stripe[3]["data"] as? [String: Any])?["transaction"] as? [String: Any])
                    #expect(transaction["amount_refunded"] as? Int == 4_999 && transaction["status"] as? String == "refunded")
                    #expect((stripe[3]["cause"] as? [String: Any])?["event_type"] as? String == "charge.refunded")

                    let refundOnly = try Self.events(refunds, secret: refundSecret)
                    #expect(Self.types(refundOnly) == ["entitlement.refunded", "transaction.refunded"])
                    // One event, the same id and body at every endpoint that takes it.
                    #expect(refundOnly.map { $0["id"] as? String } == [stripe[2]["id"] as? String, stripe[3]["id"] as? String])
                }
            }
        }
    }

    @Test func accessThatRunsOutByTheClockIsAnnouncedOnceAndARenewalFollows() async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run(worker: ["ENTITLEMENT_LEEWAY_SECONDS": "0"]) { system in
                let (_, secret) = try await Self.addEndpoint(system, url: sink.url, events: ["entitlement.*"])
                let user = UUID().uuidString.lowercased()
                let expires = Date().addingTimeInterval(2)
                let tx = subscription("43001", user: user, purchased: Self.at(0), expires: expires)
                try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
                try await system.drain()
                let sweep = ClockExpirySweep(client: system.db.client, outbox: ForwardOutbox(leeway: 0, sandboxAccess: .anybody, onCreated: {}), logger: TestDatabase.logger)
                // Judged a second before the end, whatever the time is now on a loaded machine.
                #expect(try await sweep.sweep(now: expires.addingTimeInterval(-1)) == 0, "nothing has run out yet")
                try await Task.sleep(for: .seconds(max(0, expires.timeIntervalSinceNow) + 1))
                // Two workers' services: the one holding the clock-expiry lease sweeps, once.
                let services = ["worker-a", "worker-b"].map { owner in
                    ClockExpiryService(
                        sweep: sweep, lease: MaintenanceLease(client: system.db.client, task: "clock-expiry", owner: owner, logger: TestDatabase.logger),
                        interval: .seconds(30), logger: TestDatabase.logger)
                }
                let (a, b) = try await (services[0].runOnce(), services[1].runOnce())
                #expect([a, b].compactMap { $0 } == [1], "one worker holds the lease and announces the row")
                #expect(try await sweep.sweep() == 0, "announced once")
                var renewal = subscription("43002", user: user, purchased: Date())
                renewal.originalTransactionId = "43001"
                try await system.notify("DID_RENEW", transaction: renewal)
                try await system.drain()
                try await system.forward()

                let events = try Self.events(sink, secret: secret)
                #expect(Self.types(events) == ["entitlement.granted", "entitlement.expired", "entitlement.renewed"])
                #expect((events[1]["cause"] as? [String: Any])?["origin"] as? String == "clock")
                #expect(Self.entitlement(events[1])["is_active"] as? Bool == false)
                #expect(Self.entitlement(events[1])["status"] as? String == "active", "the status is the provider's; the clock ended access")
                let previous = (events[2]["data"] as? [String: Any])?["previous"] as? [String: Any]
                #expect(previous?["is_active"] as? Bool == false)
                #expect(Self.entitlement(events[2])["is_active"] as? Bool == true)
            }
        }
    }

    @Test func aProductChangeIsAnnounced() async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run { system in
                let (_, secret) = try await Self.addEndpoint(system, url: sink.url, events: ["entitlement.*"])
                let user = UUID().uuidString.lowercased()
                let tx = subscription("44001", user: user, purchased: Self.at(0))
                try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: Self.at(0))
                let renewal = SampleAppleRenewalInfo(originalTransactionId: "44001", productId: "pro.monthly", autoRenewProductId: "pro.yearly")
                try await system.notify("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", transaction: tx, renewal: renewal, at: Self.at(1))
                try await system.drain()
                try await system.forward()
                let events = try Self.events(sink, secret: secret)
                #expect(Self.types(events) == ["entitlement.granted", "entitlement.product_changed"])
                #expect(Self.entitlement(events[1])["renews_into_product_id"] as? String == "pro.yearly")
            }
        }
    }

    @Test func aRefundOfAPeriodTheLedgerNeverSawEntersTheLedgerAndIsAnnounced() async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run { system in
                let (_, secret) = try await Self.addEndpoint(system, url: sink.url, events: ["transaction.*"])
                let user = UUID().uuidString.lowercased()
                try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("45001", user: user, purchased: Self.at(0)), at: Self.at(0))
                // The renewal's DID_RENEW never arrived; its REFUND does.
                var unseen = subscription("45002", user: user, purchased: Self.at(1))
                unseen.originalTransactionId = "45001"
                unseen.revocationDate = Self.at(2).millisecondsSince1970
                unseen.revocationReason = 0
                try await system.notify("REFUND", transaction: unseen, at: Self.at(2))
                try await system.drain()
                try await system.forward()
                let history = try await system.transactions(userID: user)
                #expect(history.compactMap { $0["provider_transaction_id"] as? String }.sorted() == ["45001", "45002"])
                #expect(history.first { $0["provider_transaction_id"] as? String == "45002" }?["status"] as? String == "refunded")
                let events = try Self.events(sink, secret: secret)
                #expect(Self.types(events) == ["transaction.succeeded", "transaction.refunded"])
                #expect((events[1]["data"] as? [String: Any])?["previous"] is NSNull)
            }
        }
    }

    @Test func aRebuildAnnouncesWhatItChangedOnceAndADryRunNothing() async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run { system in
                let (_, secret) = try await Self.addEndpoint(system, url: sink.url, events: ["entitlement.*"])
                let user = UUID().uuidString.lowercased()
                try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("46001", user: user, purchased: Self.at(0)), at: Self.at(0))
                try await system.drain()
                // A handler bug wrote the wrong state; the fixed handlers rebuild it from the stored events.
                try await system.db.client.query("UPDATE entitlements SET status = 'expired'", logger: TestDatabase.logger)
                let handlers = EventHandlers.all(logger: TestDatabase.logger).compactMapValues { $0 as? any EventApplier }
                let rebuilder = EntityRebuilder(client: system.db.client, handlers: handlers, proof: nil, logger: TestDatabase.logger)
                let key = "apple:sandbox:46001"
                _ = try await rebuilder.rebuild(key, dryRun: true)
                #expect(try await system.db.scalar("SELECT count(*) FROM outgoing_events WHERE entity_key = \(key)") == 2)
                _ = try await rebuilder.rebuild(key, dryRun: false)
                _ = try await rebuilder.rebuild(key, dryRun: false)
                try await system.forward()
                let events = try Self.events(sink, secret: secret)
                #expect(Self.types(events) == ["entitlement.granted", "entitlement.renewed"], "the second rebuild changed nothing")
                #expect((events[1]["cause"] as? [String: Any])?["origin"] as? String == "rebuild")
                let sequences = events.compactMap { $0["sequence"] as? Int }
                #expect(sequences == sequences.sorted())
            }
        }
    }
}
