// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Testing
import TestSupport
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Shared

/// Sandbox and production kept apart from the request to the read API: Apple's environment from the
/// verified payload, Stripe's from `livemode`, the read API's `environment` parameter and
/// `READ_API_ENVIRONMENT`.
@Suite(.timeLimit(.minutes(3)))
struct EnvironmentTests {
    static let user = "7a0c2f4e-91d3-4b8a-a6f5-0e2d9c4b1a37"

    /// One purchase of each kind for ``user``: an Apple production notification, a Sandbox StoreKit
    /// sync (no query parameter), a Stripe test-mode payment and a Stripe live payment.
    static func purchaseInEveryEnvironment(_ system: SystemHarness) async throws {
        try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("4001", user: user, product: "pro.monthly"), production: true)
        try await system.sync(subscription("4002", user: user, product: "pro.yearly"), userID: user)
        try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_test_1", user: user, product: "web.lifetime"), livemode: false)
        try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_live_1", user: user, product: "web.lifetime"), livemode: true)
        try await system.drain()
    }

    static func environments(_ items: [[String: Any]]) -> [String: Int] {
        items.reduce(into: [:]) { counts, item in counts[item["environment"] as? String ?? "missing", default: 0] += 1 }
    }

    @Test func eachItemSaysItsEnvironmentAndTheParameterSelects() async throws {
        try await SystemHarness.run { system in
            try await Self.purchaseInEveryEnvironment(system)
            let all = try await system.entitlements(userID: Self.user)
            #expect(Self.environments(all) == ["production": 2, "sandbox": 2])
            let production = try await system.entitlements(userID: Self.user, query: "&environment=production")
            #expect(Set(production.compactMap { $0["product_id"] as? String }) == ["pro.monthly", "web.lifetime"])
            #expect(Self.environments(production) == ["production": 2])
            let sandbox = try await system.entitlements(userID: Self.user, query: "&environment=sandbox")
            #expect(Set(sandbox.compactMap { $0["product_id"] as? String }) == ["pro.yearly", "web.lifetime"])
            #expect(Self.environments(sandbox) == ["sandbox": 2])
            #expect(Self.environments(try await system.entitlements(userID: Self.user, query: "&environment=all")) == ["production": 2, "sandbox": 2])

            #expect(Self.environments(try await system.transactions(userID: Self.user)) == ["production": 2, "sandbox": 2])
            let liveHistory = try await system.transactions(userID: Self.user, query: "&environment=production")
            #expect(Set(liveHistory.compactMap { $0["provider_transaction_id"] as? String }) == ["4001", "pi_live_1"])
        }
    }

    @Test func aDeploymentMayReadOnlyRealPaymentsByDefault() async throws {
        try await SystemHarness.run(ingest: ["READ_API_ENVIRONMENT": "production"]) { system in
            try await Self.purchaseInEveryEnvironment(system)
            #expect(Self.environments(try await system.entitlements(userID: Self.user)) == ["production": 2])
            #expect(Self.environments(try await system.transactions(userID: Self.user)) == ["production": 2])
            #expect(Self.environments(try await system.entitlements(userID: Self.user, query: "&environment=all")) == ["production": 2, "sandbox": 2])
        }
    }

    @Test(arguments: ["live", "Production", ""])
    func anUnknownEnvironmentIsABadRequest(value: String) async throws {
        try await SystemHarness.run { system in
            for path in ["/v1/iap/entitlements", "/v1/iap/transaction-history"] {
                let response = try await system.client.execute(
                    uri: "\(path)?user_id=u&environment=\(value)", method: .get, headers: [.authorization: "Bearer \(TestCredentials.apiKey)"])
                #expect(response.status == .badRequest)
                #expect(String(buffer: response.body).contains("invalid_environment"))
            }
        }
    }

    @Test func oneEnvironmentsEventsNeverChangeTheOthersState() async throws {
        try await SystemHarness.run { system in
            // The same originalTransactionId in both environments (ids are not promised to be apart).
            let start = Date().addingTimeInterval(-600)
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("5001", user: Self.user, purchased: start), at: start, production: true)
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("5001", user: Self.user, purchased: start), at: start)
            var refunded = subscription("5001", user: Self.user, purchased: start)
            refunded.revocationDate = Date().millisecondsSince1970
            try await system.notify("REFUND", transaction: refunded, at: start.addingTimeInterval(60))
            try await system.drain()
            let production = try #require(try await system.entitlements(userID: Self.user, query: "&environment=production").first)
            let sandbox = try #require(try await system.entitlements(userID: Self.user, query: "&environment=sandbox").first)
            #expect(production["status"] as? String == "active")
            #expect(sandbox["status"] as? String == "refunded")
            let history = try await system.transactions(userID: Self.user)
            #expect(history.count == 2)
            #expect(Set(history.compactMap { $0["status"] as? String }) == ["succeeded", "refunded"])
        }
    }
}

/// `SANDBOX_ACCESS=listed`: a sandbox purchase gives access only to the listed users; the data is
/// kept and shown when asked for by environment, and announcements read as the read API.
@Suite(.timeLimit(.minutes(3)))
struct SandboxAccessSystemTests {
    static let tester = "tester-9"
    static let stranger = "stranger-4"

    static func access(_ entitlement: [String: Any]) -> String {
        "\(entitlement["product_id"] as? String ?? "?") \(entitlement["is_active"] as? Bool == true ? "active" : "inactive")"
    }

    @Test func onlyListedUsersSandboxPurchasesGiveAccess() async throws {
        let settings = ["SANDBOX_ACCESS": "listed", "SANDBOX_USERS": "someone-else,\(Self.tester)"]
        try await SystemHarness.run(worker: settings, ingest: settings) { system in
            for user in [Self.tester, Self.stranger] {
                try await system.stripe(
                    "payment_intent.succeeded", StripeObjects.paymentIntent("pi_test_\(user)", user: user, product: "web.lifetime"), livemode: false)
                try await system.stripe(
                    "payment_intent.succeeded", StripeObjects.paymentIntent("pi_live_\(user)", user: user, product: "web.pro"), livemode: true)
            }
            try await system.drain()

            // The tester's sandbox purchase counts; the stranger's is left out of the default answer.
            let tester = try await system.entitlements(userID: Self.tester)
            #expect(Set(tester.map(Self.access)) == ["web.lifetime active", "web.pro active"])
            let stranger = try await system.entitlements(userID: Self.stranger)
            #expect(stranger.map(Self.access) == ["web.pro active"])
            // Kept, and shown when the environment is asked for: inactive.
            for query in ["&environment=sandbox", "&environment=all"] {
                let asked = try await system.entitlements(userID: Self.stranger, query: query)
                let sandbox = try #require(asked.first { $0["environment"] as? String == "sandbox" })
                #expect(sandbox["status"] as? String == "active")
                #expect(sandbox["is_active"] as? Bool == false)
            }

            // Announced as the read API reads it.
            let announced = try await system.db.strings(
                "SELECT convert_from(payload, 'UTF8') FROM outgoing_events WHERE environment = 'sandbox' AND type LIKE 'entitlement.%' ORDER BY user_id")
            #expect(announced.count == 2)
            for (body, user) in zip(announced, [Self.stranger, Self.tester].sorted()) {
                let json = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
                let entitlement = try #require((json["data"] as? [String: Any])?["entitlement"] as? [String: Any])
                #expect(entitlement["user_id"] as? String == user)
                #expect(entitlement["is_active"] as? Bool == (user == Self.tester))
            }
        }
    }
}
