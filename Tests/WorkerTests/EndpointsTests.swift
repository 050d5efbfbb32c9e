// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import NIOCore
import PostgresNIO
import Prometheus
import Shared
import Testing
import TestSupport

@testable import Worker

/// Endpoints managed at run time: secrets and their rotation, resend, disable and enable, the
/// automatic disabling of an endpoint that keeps failing, ordering per entitlement, and the
/// `worker endpoints` commands.
@Suite(.timeLimit(.minutes(5)))
struct EndpointsTests {
    static func store(_ system: SystemHarness) -> EndpointStore {
        EndpointStore(client: system.db.client, logger: TestDatabase.logger)
    }

    static func verifies(_ received: HTTPSink.Received, secret: String) -> Bool {
        guard let id = received.header("webhook-id"), let timestamp = received.header("webhook-timestamp").flatMap({ Int64($0) }),
              let signature = received.header("webhook-signature")
        else { return false }
        return StandardWebhooksReceiver.verifies(id: id, timestamp: timestamp, body: received.body, signatureHeader: signature, secret: secret)
    }

    @Test func duringARotationsGraceBothSecretsSignAndAfterItOnlyTheNewOne() async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run { system in
                let (endpoint, old) = try await OutgoingEventsTests.addEndpoint(system, url: sink.url, events: ["entitlement.granted"])
                let graced = Endpoint.newSecret()
                _ = try await Self.store(system).rotateSecret(endpoint.id, newSecret: graced, graceSeconds: 3_600)
                try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_51", user: "u51"))
                try await system.drain()
                try await system.forward()
                let first = try #require(sink.received.last)
                #expect(first.header("webhook-signature")?.split(separator: " ").count == 2)
                #expect(Self.verifies(first, secret: old) && Self.verifies(first, secret: graced))

                let next = Endpoint.newSecret()
                _ = try await Self.store(system).rotateSecret(endpoint.id, newSecret: next, graceSeconds: 0)
                try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_52", user: "u52"))
                try await system.drain()
                try await system.forward()
                let second = try #require(sink.received.last)
                #expect(sink.received.count == 2)
                #expect(second.header("webhook-signature")?.split(separator: " ").count == 1)
                #expect(Self.verifies(second, secret: next))
                #expect(!Self.verifies(second, secret: graced) && !Self.verifies(second, secret: old))
            }
        }
    }

    @Test func resendQueuesAWindowAgainWithTheSameIdsAndANewEndpointGetsOnlyNewEventsUnlessBackfilled() async throws {
        try await HTTPSink.with { sink in
            try await HTTPSink.with { late in
                try await SystemHarness.run { system in
                    let (endpoint, secret) = try await OutgoingEventsTests.addEndpoint(system, url: sink.url)
                    try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_53", user: "u53"))
                    try await system.drain()
                    try await system.forward()
                    #expect(sink.received.count == 2)
                    let ids = sink.received.compactMap { $0.header("webhook-id") }

                    // Added after the events: nothing, unless it asks for a backfill.
                    let (newcomer, _) = try await OutgoingEventsTests.addEndpoint(system, url: late.url)
                    try await system.forward()
                    #expect(late.received.isEmpty)
                    let since = Date().addingTimeInterval(-600)
                    #expect(try await Self.store(system).resend(newcomer, .init(since: since), dryRun: true) == 2)
                    #expect(try await Self.store(system).resend(newcomer, .init(since: since), dryRun: false) == 2)
                    try await system.forward()
                    #expect(late.received.compactMap { $0.header("webhook-id") } == ids)

                    #expect(try await Self.store(system).resend(endpoint, .init(since: since, failedOnly: true), dryRun: false) == 0)
                    #expect(try await Self.store(system).resend(
                        endpoint, .init(since: since, types: ["transaction.succeeded"]), dryRun: false) == 1)
                    #expect(try await Self.store(system).resend(endpoint, .init(since: Date().addingTimeInterval(60)), dryRun: false) == 0)
                    try await system.forward()
                    #expect(sink.received.count == 3)
                    #expect(sink.received.last?.header("webhook-id") == ids[1])
                    #expect(Self.verifies(try #require(sink.received.last), secret: secret))
                }
            }
        }
    }

    @Test func aDisabledEndpointsDeliveriesWaitAndLeaveOnceItIsEnabled() async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run { system in
                let (endpoint, _) = try await OutgoingEventsTests.addEndpoint(system, url: sink.url)
                _ = try await Self.store(system).setDisabled(endpoint.id, reason: "disabled by an operator")
                try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_54", user: "u54"))
                try await system.drain()
                try await system.forward()
                #expect(sink.received.isEmpty, "a disabled endpoint gets no new events")
                // Enabled again: what it missed comes by resend; new events come at once.
                _ = try await Self.store(system).setDisabled(endpoint.id, reason: nil)
                try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_55", user: "u55"))
                try await system.drain()
                // Deliveries made while enabled, then held while disabled, leave once enabled.
                _ = try await Self.store(system).setDisabled(endpoint.id, reason: "disabled by an operator")
                #expect(try await system.deliveries.queue.dequeue(limit: 10, owner: "probe").isEmpty)
                _ = try await Self.store(system).setDisabled(endpoint.id, reason: nil)
                try await system.forward()
                #expect(sink.received.count == 2)
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'done'") == 2)
            }
        }
    }

    @Test func anEndpointFailingLongerThanTheLimitIsDisabledAndCounted() async throws {
        try await HTTPSink.with { sink in
            sink.answer { _ in .init(status: .internalServerError) }
            try await SystemHarness.run(worker: ["ENDPOINT_DISABLE_AFTER": "1s", "MAX_ATTEMPTS": "50"]) { system in
                let (endpoint, _) = try await OutgoingEventsTests.addEndpoint(system, url: sink.url, events: ["entitlement.granted"])
                try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_56", user: "u56"))
                try await system.drain()
                let first = try #require(try await system.deliveries.queue.dequeue(limit: 1, owner: "t").first)
                await system.deliveries.execute(first)
                #expect(try await Self.store(system).endpoint(endpoint.id)?.failingSince != nil)
                #expect(try await Self.store(system).endpoint(endpoint.id)?.disabledAt == nil)
                try await Task.sleep(for: .milliseconds(1_200))
                let second = try #require(try await system.deliveries.queue.dequeue(limit: 1, owner: "t").first)
                await system.deliveries.execute(second)
                let disabled = try #require(try await Self.store(system).endpoint(endpoint.id))
                #expect(disabled.disabledAt != nil)
                #expect(disabled.disabledReason?.hasPrefix("failing since") == true)
                #expect(try await system.deliveries.queue.dequeue(limit: 1, owner: "t").isEmpty, "its delivery waits, not lost")
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'pending'") == 1)
                let metrics = String(decoding: system.metrics.registry.emitToBuffer(), as: UTF8.self)
                #expect(metrics.contains(#"sluice_endpoints_disabled_total{endpoint="\#(endpoint.name)",reason="failing"} 1"#), "\(metrics)")
                // Enabled by an operator: the run starts afresh.
                #expect(try await Self.store(system).setDisabled(endpoint.id, reason: nil)?.failingSince == nil)
            }
        }
    }

    @Test func aFailingDeliveryHoldsBackLaterOnesOfItsEntitlementOnly() async throws {
        try await HTTPSink.with { sink in
            sink.answer { $0 == 1 ? .init(status: .internalServerError) : .ok }
            try await SystemHarness.run(worker: ["RETRY_BASE_SECONDS": "600", "RETRY_MAX_SECONDS": "600"]) { system in
                _ = try await OutgoingEventsTests.addEndpoint(system, url: sink.url, events: ["entitlement.*"])
                let periodEnd = Date().addingTimeInterval(30 * 86_400)
                try await system.stripe("customer.subscription.created", StripeObjects.subscription("sub_a", user: "ua", periodEnd: periodEnd))
                try await system.drain()
                try await system.stripe(
                    "customer.subscription.updated",
                    StripeObjects.subscription("sub_a", user: "ua", periodEnd: periodEnd, cancelAtPeriodEnd: true, canceledAt: Date()))
                try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_b", user: "ub"))
                try await system.drain()
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries") == 3)

                let first = try #require(try await system.deliveries.queue.dequeue(limit: 1, owner: "t").first)
                await system.deliveries.execute(first)
                // The first (sub_a's grant) failed and backs off: sub_a's cancellation waits behind it, pi_b's grant leaves.
                try await system.forward()
                #expect(sink.received.count == 2)
                let types = try sink.received.compactMap { try JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] }
                    .map { OutgoingEventsTests.entitlement($0)["user_id"] as? String }
                #expect(types == ["ua", "ub"], "the failed attempt, then the other entitlement's")
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'pending'") == 2)
                // Once the first is through, the second follows.
                try await system.db.client.query("UPDATE deliveries SET run_at = now() WHERE state = 'pending'", logger: TestDatabase.logger)
                try await system.forward()
                let users = try sink.received.dropFirst(2).compactMap { try JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] }
                #expect(users.map { $0["type"] as? String } == ["entitlement.granted", "entitlement.cancelled"])
            }
        }
    }

    /// `--max-per-second`: a worker sends an endpoint no more than that many deliveries a second,
    /// even with several deliveries ready and several workers free. (A lower bound on time: load
    /// can only make the deliveries later.)
    @Test func anEndpointsRateLimitSpacesItsDeliveries() async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run { system in
                let (endpoint, _) = try await OutgoingEventsTests.addEndpoint(system, url: sink.url, events: ["entitlement.granted"])
                _ = try await Self.store(system).update(endpoint.id, .init(maxPerSecond: .some(4)))
                for n in 0..<5 {
                    try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_rate_\(n)", user: "u_rate_\(n)"))
                }
                try await system.drain()
                let started = ContinuousClock.now
                try await system.forward(workers: 5)
                let arrivals = sink.received.map(\.arrivedAt)
                try #require(arrivals.count == 5)
                // Four a second: slots 250 ms apart from the first, which is no earlier than the
                // start, so the last leaves a second after the start or later, however late each
                // arrives (from the first arrival, 669 ms were seen on a busy machine: the first
                // arrived late). Without the limit all five arrive within a few milliseconds.
                #expect(started.duration(to: arrivals.max()!) >= .seconds(1), "\(arrivals)")
            }
        }
    }

    @Test func theCommandsManageEndpointsAndRefuseBadInput() async throws {
        try await TestDatabase.with { db in
            let added = try await OperatorCommandTests.worker(
                db, ["endpoints", "add", "https://hooks.example.com/sluice?token=x", "--events", "entitlement.*", "--source", "apple",
                     "--description", "billing", "--json"])
            #expect(added.status == 0, "\(added.stderr)")
            let endpoint = try #require(try OperatorCommandTests.json(added.stdout) as? [String: Any])
            let id = try #require(endpoint["id"] as? String)
            #expect(id.hasPrefix("ep_"))
            #expect((endpoint["secret"] as? String)?.hasPrefix("whsec_") == true)
            #expect(endpoint["events"] as? [String] == ["entitlement.*"])
            #expect(endpoint["url"] as? String == "https://hooks.example.com/sluice?token=x", "the operator's own output: the whole URL")
            let unfiltered = try await OperatorCommandTests.worker(db, ["endpoints", "add", "https://all.example.com/hook", "--json"])
            let every = try #require(try OperatorCommandTests.json(unfiltered.stdout) as? [String: Any])
            #expect(every["events"] as? [String] == ["*"] && every["sources"] as? [String] == ["stripe", "apple", "google_play"], "empty filters, as the text says them")
            let everyID = try #require(every["id"] as? String)
            #expect(try await OperatorCommandTests.worker(db, ["endpoints", "show", everyID]).stdout.contains("url          https://all.example.com/hook"))
            #expect(try await OperatorCommandTests.worker(db, ["endpoints", "remove", everyID]).status == 0)

            let listed = try await OperatorCommandTests.worker(db, ["endpoints", "list", "--json"])
            let all = try #require(try OperatorCommandTests.json(listed.stdout) as? [[String: Any]])
            #expect(all.count == 1 && all[0]["secret"] == nil, "the secret is printed once, at creation")

            #expect(try await OperatorCommandTests.worker(db, ["endpoints", "disable", id]).status == 0)
            let shown = try await OperatorCommandTests.worker(db, ["endpoints", "show", id, "--json"])
            #expect((try OperatorCommandTests.json(shown.stdout) as? [String: Any])?["enabled"] as? Bool == false)
            #expect(try await OperatorCommandTests.worker(db, ["endpoints", "enable", id]).status == 0)
            let updated = try await OperatorCommandTests.worker(db, ["endpoints", "update", id, "--max-per-second", "5", "--json"])
            #expect((try OperatorCommandTests.json(updated.stdout) as? [String: Any])?["max_per_second"] as? Int == 5)
            let rotated = try await OperatorCommandTests.worker(db, ["endpoints", "rotate-secret", id, "--grace", "1h", "--json"])
            let rotation = try #require(try OperatorCommandTests.json(rotated.stdout) as? [String: Any])
            #expect(rotation["secret"] as? String != endpoint["secret"] as? String)
            #expect(rotation["previous_secret_expires_at"] is String)
            #expect(try await OperatorCommandTests.worker(db, ["endpoints", "resend", id, "--since", "1h", "--dry-run"]).stdout == "would queue 0 deliveries\n")

            #expect(try await OperatorCommandTests.worker(db, ["endpoints", "add", "ftp://nope"]).status == 2)
            #expect(try await OperatorCommandTests.worker(db, ["endpoints", "add", "https://a.example", "--events", "entitlements.*"]).status == 2)
            #expect(try await OperatorCommandTests.worker(db, ["endpoints", "add", "https://a.example", "--environment", "staging"]).status == 2)
            let missing = try await OperatorCommandTests.worker(db, ["endpoints", "show", "ep_999"])
            #expect(missing.status == 1 && missing.stderr.contains("no endpoint ep_999"))
            #expect(try await OperatorCommandTests.worker(db, ["endpoints", "remove", id]).status == 0)
            #expect(try await OperatorCommandTests.worker(db, ["endpoints", "list"]).stdout.contains("no endpoints"))
        }
    }
}
