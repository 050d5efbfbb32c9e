// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Shared
import Testing
import TestSupport

@testable import Worker

/// The example bodies of docs/webhooks.md are made here, by real provider events through the
/// whole path, not written by hand: `SLUICE_WRITE_EXAMPLES=1 scripts/test --filter
/// WebhookExamplesTests` writes them to docs/webhook-examples/. Every run checks that each type is
/// documented and that the committed examples still have the shape Sluice sends.
@Suite(.timeLimit(.minutes(5)))
struct WebhookExamplesTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let examples = repository.appendingPathComponent("docs/webhook-examples")
    static let start = Date().addingTimeInterval(-7_200).rounded
    static func at(_ minutes: Double) -> Date { start.addingTimeInterval(minutes * 60) }

    @Test func everyTypeIsDocumentedWithAnExampleOfTheShapeSluiceSends() async throws {
        let produced = try await Self.produceExamples()
        let documentation = try String(contentsOf: Self.repository.appendingPathComponent("docs/webhooks.md"), encoding: .utf8)
        for type in OutgoingEventType.allCases {
            #expect(documentation.contains("### `\(type.rawValue)`"), "docs/webhooks.md has no section for \(type.rawValue)")
        }
        #expect(Set(produced.keys) == Set(OutgoingEventType.allCases.map(\.rawValue)),
                "the scenario produces every type: missing \(Set(OutgoingEventType.allCases.map(\.rawValue)).subtracting(produced.keys).sorted())")
        let write = ProcessInfo.processInfo.environment["SLUICE_WRITE_EXAMPLES"] == "1"
        if write { try FileManager.default.createDirectory(at: Self.examples, withIntermediateDirectories: true) }
        for (type, body) in produced {
            let file = Self.examples.appendingPathComponent("\(type).json")
            let pretty = try JSONSerialization.data(withJSONObject: body, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            if write {
                try (pretty + Data("\n".utf8)).write(to: file)
                continue
            }
            let committed = try JSONSerialization.jsonObject(with: Data(contentsOf: file))
            #expect(Self.shape(committed) == Self.shape(body), "docs/webhook-examples/\(type).json is out of date: SLUICE_WRITE_EXAMPLES=1")
            #expect(documentation.contains("webhook-examples/\(type).json"), "docs/webhooks.md does not link the \(type) example")
        }
    }

    /// Every key path of a JSON value, with the kind of value there (`null` counts as any).
    static func shape(_ value: Any, path: String = "") -> Set<String> {
        switch value {
        case let object as [String: Any]:
            return object.reduce(into: Set([path + ":object"])) { $0.formUnion(shape($1.value, path: path + "." + $1.key)) }
        case is NSNull: return [path]
        default: return [path]
        }
    }

    /// Runs a scenario that makes each type once at least; returns the first body of each type.
    static func produceExamples() async throws -> [String: [String: Any]] {
        let bodies: [[UInt8]] = try await HTTPSink.with { sink in
            try await SystemHarness.run { system in
                _ = try await OutgoingEventsTests.addEndpoint(system, url: sink.url)
                // A catalog, so the examples show the access levels each entitlement gives.
                let catalog = CatalogStore(client: system.db.client, logger: TestDatabase.logger)
                // pro.monthly grants credits too, for balance.changed.
                for (id, levels) in [("pro.monthly", ["pro"]), ("pro.yearly", ["ad_free", "pro"])] {
                    _ = try await catalog.add(CatalogProduct(
                        id: id, type: .autoRenewable, accessLevels: levels, currencyGrants: id == "pro.monthly" ? ["credits": 1_000] : [:]))
                }
                try await appleLifecycle(system)
                try await appleRefund(system)
                try await appleTransfer(system)
                try await stripeLifecycles(system)
                try await system.drain()
                try await system.announceBalances()
                try await system.forward()
            }
            return sink.received.map(\.body)
        }
        var first: [String: [String: Any]] = [:]
        for received in bodies {
            guard let body = try JSONSerialization.jsonObject(with: Data(received)) as? [String: Any],
                  let type = body["type"] as? String, first[type] == nil
            else { continue }
            first[type] = body
        }
        return first
    }

    static func appleLifecycle(_ system: SystemHarness) async throws {
        let user = "8f1c2a6e-4b1d-4c55-9a53-0d1e5b7c9a11"
        let tx = subscription("2000000061001", user: user, purchased: at(0))
        try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: at(0))
        try await system.notify("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", transaction: tx,
                                renewal: .init(originalTransactionId: tx.transactionId, autoRenewStatus: 0), at: at(1))
        try await system.notify("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", transaction: tx,
                                renewal: .init(originalTransactionId: tx.transactionId, autoRenewStatus: 1), at: at(2))
        try await system.notify("DID_CHANGE_RENEWAL_PREF", "UPGRADE", transaction: tx,
                                renewal: .init(originalTransactionId: tx.transactionId, productId: "pro.monthly", autoRenewProductId: "pro.yearly"),
                                at: at(3))
        var grace = SampleAppleRenewalInfo(originalTransactionId: tx.transactionId, productId: "pro.monthly", autoRenewProductId: "pro.yearly")
        grace.gracePeriodExpiresDate = at(0).addingTimeInterval(36 * 86_400).millisecondsSince1970
        grace.isInBillingRetryPeriod = true
        try await system.notify("DID_FAIL_TO_RENEW", "GRACE_PERIOD", transaction: tx, renewal: grace, at: at(4))
        var renewal = subscription("2000000061002", user: user, product: "pro.yearly", purchased: at(5),
                                   expires: at(5).addingTimeInterval(365 * 86_400))
        renewal.originalTransactionId = tx.transactionId
        try await system.notify("DID_RENEW", "BILLING_RECOVERY", transaction: renewal, at: at(5))
        var increase = SampleAppleRenewalInfo(originalTransactionId: tx.transactionId, productId: "pro.yearly")
        increase.priceIncreaseStatus = 0
        try await system.notify("PRICE_INCREASE", "PENDING", transaction: renewal, renewal: increase, at: at(6))
        try await system.notify("DID_FAIL_TO_RENEW", transaction: renewal, at: at(7))
        try await system.notify("EXPIRED", "BILLING_RETRY", transaction: renewal, at: at(8))
        var back = subscription("2000000061003", user: user, product: "pro.yearly", purchased: at(9),
                                expires: at(9).addingTimeInterval(365 * 86_400))
        back.originalTransactionId = tx.transactionId
        try await system.notify("SUBSCRIBED", "RESUBSCRIBE", transaction: back, at: at(9))
    }

    static func appleRefund(_ system: SystemHarness) async throws {
        var tx = subscription("2000000062001", user: "2b7e4c1a-9d3f-4e8b-8c2a-5f6d7e8a9b01", purchased: at(0))
        try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: tx, at: at(0))
        tx.revocationDate = at(2).millisecondsSince1970
        tx.revocationReason = 0
        try await system.notify("REFUND", transaction: tx, at: at(2))
        tx.revocationDate = nil
        tx.revocationReason = nil
        try await system.notify("REFUND_REVERSED", transaction: tx, at: at(3))
    }

    static func appleTransfer(_ system: SystemHarness) async throws {
        let tx = subscription("2000000063001", user: nil, purchased: at(0))
        try await system.sync(tx, userID: "app_user_1")
        try await system.drain()
        var later = tx
        later.signedDate = Date().millisecondsSince1970
        try await system.sync(later, userID: "app_user_2")
    }

    static func stripeLifecycles(_ system: SystemHarness) async throws {
        let end = Date().addingTimeInterval(30 * 86_400)
        try await system.stripe("customer.subscription.created", StripeObjects.subscription("sub_1QexamplePause", user: "web_user_7", periodEnd: end), at: at(0))
        try await system.stripe("customer.subscription.paused", StripeObjects.subscription("sub_1QexamplePause", status: "paused", user: "web_user_7", periodEnd: end), at: at(1))
        try await system.stripe("customer.subscription.resumed", StripeObjects.subscription("sub_1QexamplePause", user: "web_user_7", periodEnd: end), at: at(2))
        try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_3QexampleDispute", user: "web_user_8", charge: "ch_3QexampleDispute"), at: at(0))
        try await system.stripe("charge.dispute.created", StripeObjects.dispute("dp_1Qexample", charge: "ch_3QexampleDispute", paymentIntent: "pi_3QexampleDispute"), at: at(1))
        try await system.stripe("charge.dispute.funds_reinstated", StripeObjects.dispute("dp_1Qexample", charge: "ch_3QexampleDispute", paymentIntent: "pi_3QexampleDispute", status: "won"), at: at(2))
        try await system.stripe("customer.subscription.created", StripeObjects.subscription("sub_1QexampleDue", user: "web_user_9", periodEnd: end), at: at(0))
        try await system.stripe("customer.subscription.updated", StripeObjects.subscription("sub_1QexampleDue", status: "past_due", user: "web_user_9", periodEnd: end), at: at(1))
    }
}
