// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Ingest
@testable import Worker

/// Web checkout through the real HTTP API, a Stripe stand-in built from Stripe's documented
/// requests and answers, signed webhooks and the worker's apply (docs/checkout.md).
@Suite(.serialized) struct CheckoutTests {
    static let lifetime = CatalogProduct(
        id: "pro.lifetime", type: .nonConsumable, stripePrice: "price_life", accessLevels: ["pro"])
    static let monthly = CatalogProduct(
        id: "pro.monthly", type: .autoRenewable, stripePrice: "price_month", accessLevels: ["pro"])
    static let yearly = CatalogProduct(
        id: "pro.yearly", type: .autoRenewable, stripePrice: "price_year", accessLevels: ["pro"])
    static let trial = CatalogProduct(
        id: "pro.monthly.trial", type: .autoRenewable, stripePrice: "price_month", trialDays: 7, accessLevels: ["pro"])

    /// A harness with checkout on against a fresh stand-in and the three products.
    static func run(ingest: [String: String] = [:], _ body: @Sendable @escaping (SystemHarness, StripeCheckoutStandIn) async throws -> Void) async throws {
        try await StripeCheckoutStandIn.with { standIn in
            standIn.addPrice("price_life", amount: 4_999)
            standIn.addPrice("price_life_2", amount: 5_999)
            standIn.addPrice("price_month", amount: 999, interval: "month")
            standIn.addPrice("price_year", amount: 9_999, interval: "year")
            try await SystemHarness.run(worker: standIn.environment(), ingest: standIn.environment().merging(ingest) { $1 }) { system in
                let catalog = CatalogStore(client: system.db.client, logger: TestDatabase.logger)
                for product in [lifetime, monthly, trial, yearly] { _ = try await catalog.add(product) }
                try await body(system, standIn)
            }
        }
    }

    static func post(_ system: SystemHarness, _ body: [String: Any], client: (any TestClientProtocol)? = nil) async throws -> (HTTPResponse.Status, [String: Any]) {
        let response = try await (client ?? system.client).execute(
            uri: "/v1/iap/payment-intents", method: .post,
            headers: [.contentType: "application/json", HTTPField.Name("X-Sluice-Key")!: TestCredentials.apiKey],
            body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: body)))
        return (response.status, (try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]) ?? [:])
    }

    static func status(_ system: SystemHarness, _ id: String, wait: Int? = nil) async throws -> [String: Any] {
        let response = try await system.client.execute(
            uri: "/v1/iap/transactions/\(id)" + (wait.map { "?wait=\($0)" } ?? ""), method: .get,
            headers: [HTTPField.Name("X-Sluice-Key")!: TestCredentials.apiKey])
        #expect(response.status == .ok, "\(String(buffer: response.body))")
        return (try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]) ?? [:]
    }

    @Test func aOneTimeCheckoutEndsSucceededAndAWaitingRequestReturnsOnTheApply() async throws {
        try await Self.run { system, standIn in
            let (status, created) = try await Self.post(system, ["user_id": "user_web", "product_id": "pro.lifetime"])
            #expect(status == .created, "\(created)")
            #expect(created["kind"] as? String == "payment")
            #expect(created["status"] as? String == "pending")
            #expect(created["reused"] as? Bool == false)
            let id = try #require(created["transaction_id"] as? String)
            let secret = try #require(created["client_secret"] as? String)
            let paymentIntent = String(try #require(secret.components(separatedBy: "_secret_").first))
            let made = try #require(standIn.object(paymentIntent))
            #expect(made["amount"] as? Int == 4_999)
            let metadata = try #require(made["metadata"] as? [String: String])
            #expect(metadata == ["user_id": "user_web", "product_id": "pro.lifetime", "sluice_transaction_id": id])
            #expect(standIn.made.customers == 1)
            #expect(try await Self.status(system, id)["status"] as? String == "pending")

            // The app waits; the payment sheet confirms; Stripe's webhook arrives and is applied.
            async let waited = Self.status(system, id, wait: 20)
            try await Task.sleep(for: .milliseconds(300))
            try await system.stripe("payment_intent.succeeded", standIn.confirm(paymentIntent))
            try await system.drain()
            let answer = try await waited
            #expect(answer["status"] as? String == "succeeded")
            let entitlements = try #require(answer["entitlements"] as? [[String: Any]])
            #expect(entitlements.count == 1)
            #expect(entitlements.first?["product_id"] as? String == "pro.lifetime")
            #expect(entitlements.first?["is_active"] as? Bool == true)
            #expect(entitlements.first?["access_levels"] as? [String] == ["pro"])
            #expect(try await system.outcomes().contains("applied"))
            // The announcement carries the catalog's access levels too.
            let payloads = try await system.db.client.query(
                "SELECT convert_from(payload, 'UTF8') FROM outgoing_events WHERE type = 'entitlement.granted' AND user_id = 'user_web'",
                logger: TestDatabase.logger)
            var granted: [String] = []
            for try await payload in payloads.decode(String.self) { granted.append(payload) }
            #expect(granted.count == 1)
            #expect(granted.first?.contains(#""access_levels":["pro"]"#) == true, "\(granted)")

            // Paid: the next checkout of the same product is a new one, not this one again.
            let (_, again) = try await Self.post(system, ["user_id": "user_web", "product_id": "pro.lifetime"])
            #expect(again["transaction_id"] as? String != id)
            #expect(standIn.made.customers == 1, "the user's customer is reused")
        }
    }

    @Test func twentyConcurrentRequestsThroughTwoIngestsMakeOnePaymentIntent() async throws {
        try await Self.run { system, standIn in
            standIn.setDelay(.milliseconds(200))
            let environment = TestCredentials.ingestEnvironment(databaseURL: system.db.url.urlString).merging(standIn.environment()) { $1 }
            let second = try buildApplication(settings: try IngestSettings(environment: EnvironmentValues(environment)), logger: TestDatabase.logger)
            try await second.test(.router) { secondClient in
                let answers = try await withThrowingTaskGroup(of: (id: String?, secret: String?, reused: Bool?).self) { group in
                    for n in 0..<20 {
                        group.addTask {
                            let (status, body) = try await Self.post(system, ["user_id": "user_twenty", "product_id": "pro.lifetime"], client: n % 2 == 0 ? nil : secondClient)
                            #expect(status == .created || status == .ok, "\(body)")
                            return (body["transaction_id"] as? String, body["client_secret"] as? String, body["reused"] as? Bool)
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(answers.count == 20)
                #expect(Set(answers.compactMap(\.id)).count == 1)
                #expect(Set(answers.compactMap(\.secret)).count == 1)
                #expect(answers.filter { $0.reused == false }.count == 1)
                #expect(standIn.made.paymentIntents == 1)
                #expect(standIn.made.customers == 1)
            }
        }
    }

    @Test func aChangedPriceFailsTheOldCheckoutAndProcessingFreesTheSlot() async throws {
        try await Self.run { system, standIn in
            let (_, first) = try await Self.post(system, ["user_id": "user_price", "product_id": "pro.lifetime"])
            let (reusedStatus, reused) = try await Self.post(system, ["user_id": "user_price", "product_id": "pro.lifetime"])
            #expect(reusedStatus == .ok)
            #expect(reused["reused"] as? Bool == true)
            #expect(reused["client_secret"] as? String == first["client_secret"] as? String)

            _ = try await CatalogStore(client: system.db.client, logger: TestDatabase.logger).update(
                "pro.lifetime", .init(stripePrice: .some("price_life_2")))
            let (changedStatus, changed) = try await Self.post(system, ["user_id": "user_price", "product_id": "pro.lifetime"])
            #expect(changedStatus == .created)
            #expect(changed["transaction_id"] as? String != first["transaction_id"] as? String)
            #expect(try await Self.status(system, try #require(first["transaction_id"] as? String))["status"] as? String == "failed")
            #expect(standIn.made.paymentIntents == 2)

            // Processing: the user may try again with another method.
            let secret = try #require(changed["client_secret"] as? String)
            let paymentIntent = String(try #require(secret.components(separatedBy: "_secret_").first))
            var processing = try #require(standIn.object(paymentIntent)) as [String: Any]
            processing["status"] = "processing"
            try await system.stripe("payment_intent.processing", processing)
            try await system.drain()
            #expect(try await Self.status(system, try #require(changed["transaction_id"] as? String))["status"] as? String == "processing")
            let (_, third) = try await Self.post(system, ["user_id": "user_price", "product_id": "pro.lifetime"])
            #expect(third["reused"] as? Bool == false)
            #expect(standIn.made.paymentIntents == 3)

            // The sweep cancels the replaced checkout at Stripe, and leaves the processing one alone.
            let sweep = CheckoutSweepService(
                store: CheckoutStore(client: system.db.client, logger: TestDatabase.logger), stripe: Self.stripe(standIn),
                lease: MaintenanceLease(client: system.db.client, task: "checkout-sweep", owner: "test", logger: TestDatabase.logger),
                interval: .seconds(60), logger: TestDatabase.logger)
            let swept = try #require(try await sweep.runOnce())
            #expect(swept.cancelled == 1)
            let firstIntent = String(try #require((first["client_secret"] as? String)?.components(separatedBy: "_secret_").first))
            #expect(standIn.object(firstIntent)?["status"] as? String == "canceled")
            #expect(standIn.object(paymentIntent)?["status"] as? String == "requires_payment_method", "the processing payment was not cancelled")
        }
    }

    @Test func aRetryAfterStripeAnsweredTooLateMakesNoSecondObject() async throws {
        try await Self.run(ingest: ["CHECKOUT_TIMEOUT_SECONDS": "1"]) { system, standIn in
            standIn.setDelay(.milliseconds(1_500))
            let (late, refused) = try await Self.post(system, ["user_id": "user_retry", "product_id": "pro.lifetime"])
            #expect(late == .serviceUnavailable, "\(refused)")
            #expect((refused["error"] as? [String: Any])?["code"] as? String == "stripe_unavailable")
            standIn.setDelay(nil)
            // The timed-out request gave its claim back: the retry repeats the calls at once.
            let (status, retried) = try await Self.post(system, ["user_id": "user_retry", "product_id": "pro.lifetime"])
            #expect(status == .created, "\(retried)")
            #expect(standIn.made.paymentIntents == 1, "the retry's Idempotency-Key replayed Stripe's first PaymentIntent")
        }
    }

    @Test func aHungStripeCosts503WhileWebhooksAreStillAcknowledged() async throws {
        try await Self.run(ingest: ["CHECKOUT_TIMEOUT_SECONDS": "1"]) { system, standIn in
            standIn.setDelay(.seconds(30))
            async let hung = Self.post(system, ["user_id": "user_hang", "product_id": "pro.lifetime"]).0
            try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_meanwhile", user: "user_other"))
            #expect(try await hung == .serviceUnavailable)
        }
    }

    @Test func anUnconfirmedCheckoutIsCancelledAndFailedAfterItsWindow() async throws {
        try await Self.run(ingest: ["CHECKOUT_WINDOW_SECONDS": "1"]) { system, standIn in
            let (_, created) = try await Self.post(system, ["user_id": "user_window", "product_id": "pro.monthly"])
            #expect(created["kind"] as? String == "subscription")
            #expect((created["client_secret"] as? String)?.hasPrefix("pi_for_in_") == true, "basil: latest_invoice.confirmation_secret")
            let subscription = try #require(standIn.bodies.last { $0.contains("payment_behavior=default_incomplete") })
            #expect(subscription.contains("expand[]=latest_invoice.confirmation_secret"))
            // Another user's subscription, paid at Stripe while its events are still on their way.
            let (_, other) = try await Self.post(system, ["user_id": "user_window_paid", "product_id": "pro.monthly"])
            let otherID = try #require(UUID(uuidString: other["transaction_id"] as? String ?? ""))
            let paid = try await CheckoutStore(client: system.db.client, logger: TestDatabase.logger).outcome(of: otherID)
            standIn.setStatus(try #require(paid?.row.objects.subscription), "active")
            try await Task.sleep(for: .milliseconds(1_100))
            let sweep = CheckoutSweepService(
                store: CheckoutStore(client: system.db.client, logger: TestDatabase.logger), stripe: Self.stripe(standIn),
                lease: MaintenanceLease(client: system.db.client, task: "checkout-sweep", owner: "test", logger: TestDatabase.logger),
                interval: .seconds(60), logger: TestDatabase.logger)
            #expect(try await sweep.runOnce() ?? (0, 0) == (1, 1), "one cancelled; the paid one released")
            #expect(standIn.object(try #require(paid?.row.objects.subscription))?["status"] as? String == "active", "a paid subscription is never cancelled")
            let id = try #require(created["transaction_id"] as? String)
            #expect(try await Self.status(system, id)["status"] as? String == "failed")
            #expect(standIn.made.subscriptions == 2)
            let stored = try await CheckoutStore(client: system.db.client, logger: TestDatabase.logger).outcome(of: try #require(UUID(uuidString: id)))
            #expect(standIn.object(try #require(stored?.row.objects.subscription))?["status"] as? String == "canceled")
        }
    }

    @Test func trialAndHostedCheckoutsAnswerWhatTheAppOpens() async throws {
        try await Self.run { system, standIn in
            let (_, trial) = try await Self.post(system, ["user_id": "user_trial", "product_id": "pro.monthly.trial"])
            #expect(trial["kind"] as? String == "trial")
            #expect((trial["client_secret"] as? String)?.hasPrefix("seti_") == true)
            #expect(standIn.bodies.contains { $0.contains("trial_period_days=7") && $0.contains("expand[]=pending_setup_intent") })

            // Stripe makes the trial `trialing` at once; it has succeeded only once the card is saved.
            let trialID = try #require(trial["transaction_id"] as? String)
            let trialUUID = try #require(UUID(uuidString: trialID))
            let stored = try #require(try await CheckoutStore(client: system.db.client, logger: TestDatabase.logger).outcome(of: trialUUID))
            let subscriptionID = try #require(stored.row.objects.subscription)
            var created = try #require(standIn.object(subscriptionID)) as [String: Any]
            created["pending_setup_intent"] = (created["pending_setup_intent"] as? [String: any Sendable])?["id"]
            created["latest_invoice"] = (created["latest_invoice"] as? [String: any Sendable])?["id"] ?? created["latest_invoice"]
            try await system.stripe("customer.subscription.created", created, apiVersion: "2025-03-31.basil")
            try await system.drain()
            #expect(try await Self.status(system, trialID)["status"] as? String == "pending")
            try await system.stripe("setup_intent.succeeded", standIn.confirmSetup(of: subscriptionID), apiVersion: "2025-03-31.basil")
            try await system.drain()
            let setUp = try await Self.status(system, trialID)
            #expect(setUp["status"] as? String == "succeeded", "\(setUp)")
            #expect((setUp["entitlements"] as? [[String: Any]])?.first?["status"] as? String == "trialing")

            let (missing, refused) = try await Self.post(system, ["user_id": "user_hosted", "product_id": "pro.lifetime", "mode": "hosted"])
            #expect(missing == .badRequest, "\(refused)")
            let (status, hosted) = try await Self.post(system, [
                "user_id": "user_hosted", "product_id": "pro.lifetime", "mode": "hosted", "success_url": "https://app.example/done",
            ])
            #expect(status == .created, "\(hosted)")
            #expect((hosted["checkout_url"] as? String)?.hasPrefix("https://checkout.stripe.com/") == true)
            #expect(standIn.bodies.contains { $0.contains("payment_intent_data[metadata][user_id]=user_hosted") && $0.contains("client_reference_id=user_hosted") })
            // The buyer pays on Stripe's page; Stripe's webhook closes the loop.
            let hostedID = try #require(UUID(uuidString: hosted["transaction_id"] as? String ?? ""))
            let session = try #require(try await CheckoutStore(client: system.db.client, logger: TestDatabase.logger).outcome(of: hostedID)?.row.objects.checkoutSession)
            try await system.stripe("checkout.session.completed", StripeObjects.checkoutSession(
                session, mode: "payment", paymentStatus: "paid", paymentIntent: "pi_hosted_paid", user: "user_hosted", product: "pro.lifetime"))
            try await system.drain()
            let paidHosted = try await Self.status(system, hostedID.uuidString.lowercased())
            #expect(paidHosted["status"] as? String == "succeeded", "\(paidHosted)")
            #expect((paidHosted["entitlements"] as? [[String: Any]])?.first?["is_active"] as? Bool == true)

            let (unknown, _) = try await Self.post(system, ["user_id": "user_hosted", "product_id": "nope"])
            #expect(unknown == .notFound)
        }
    }

    @Test func aClientKeyMayNotChooseATrialEndNorReadAnotherUsersCheckout() async throws {
        try await Self.run(ingest: ["CHECKOUT_CLIENT_KEYS": "true"]) { system, standIn in
            func send(_ method: HTTPRequest.Method, _ uri: String, _ body: [String: Any]? = nil) async throws -> HTTPResponse.Status {
                try await system.client.execute(
                    uri: uri, method: method,
                    headers: [.contentType: "application/json", HTTPField.Name("X-Sluice-Key")!: TestCredentials.clientAPIKey],
                    body: body.map { ByteBuffer(data: try! JSONSerialization.data(withJSONObject: $0)) }).status
            }
            #expect(try await send(.post, "/v1/iap/payment-intents", [
                "user_id": "user_app", "product_id": "pro.monthly", "trial_end": "2030-01-01T00:00:00Z"]) == .forbidden)
            let (_, made) = try await Self.post(system, ["user_id": "user_app", "product_id": "pro.lifetime"])
            let id = try #require(made["transaction_id"] as? String)
            #expect(try await send(.get, "/v1/iap/transactions/\(id)") == .badRequest)
            #expect(try await send(.get, "/v1/iap/transactions/\(id)?user_id=someone_else") == .notFound)
            #expect(try await send(.get, "/v1/iap/transactions/\(id)?user_id=user_app") == .ok)
            // The server key's open checkout is not handed to an app's key: a new one is made.
            #expect(try await send(.post, "/v1/iap/payment-intents", ["user_id": "user_app", "product_id": "pro.lifetime"]) == .created)
        }
    }

    /// The attack: with `CHECKOUT_CLIENT_KEYS=true`, anyone holding the app's client key posts
    /// the victim's user id and product. Before, the victim's open checkout came back (`reused`):
    /// its client secret and Stripe customer. Now only the app's own request, repeated with its
    /// `Idempotency-Key`, is handed it; another gets a new checkout and the old one fails.
    @Test func aClientKeyNamingAnotherUserNeverGetsTheirOpenCheckout() async throws {
        try await Self.run(ingest: ["CHECKOUT_CLIENT_KEYS": "true"]) { system, standIn in
            func post(key: String?) async throws -> (HTTPResponse.Status, [String: Any]) {
                var headers: HTTPFields = [.contentType: "application/json", HTTPField.Name("X-Sluice-Key")!: TestCredentials.clientAPIKey]
                if let key { headers[HTTPField.Name("Idempotency-Key")!] = key }
                let response = try await system.client.execute(
                    uri: "/v1/iap/payment-intents", method: .post, headers: headers,
                    body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["user_id": "user_victim", "product_id": "pro.lifetime"])))
                return (response.status, (try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]) ?? [:])
            }
            let (created, victims) = try await post(key: "buy-pro-lifetime-1")
            #expect(created == .created, "\(victims)")
            let (repeated, again) = try await post(key: "buy-pro-lifetime-1")
            #expect(repeated == .ok && again["transaction_id"] as? String == victims["transaction_id"] as? String, "the app's retry: \(again)")

            for attackersKey in [nil, "buy-pro-lifetime-2"] {
                let (status, attackers) = try await post(key: attackersKey)
                #expect(status == .created, "\(attackers)")
                #expect(attackers["transaction_id"] as? String != victims["transaction_id"] as? String)
                #expect(attackers["client_secret"] as? String != victims["client_secret"] as? String)
            }
            let first = try #require(victims["transaction_id"] as? String)
            #expect(try await Self.status(system, first)["status"] as? String == "failed", "the victim's old checkout is superseded")
            // The app's backend (a server key) is handed the open one, whoever asked for it.
            let (_, newest) = try await post(key: nil)
            let (serverStatus, servers) = try await Self.post(system, ["user_id": "user_victim", "product_id": "pro.lifetime"])
            #expect(serverStatus == .ok && servers["transaction_id"] as? String == newest["transaction_id"] as? String, "\(servers)")
            #expect(try await post(key: String(repeating: "k", count: 256)).0 == .badRequest)
            #expect(standIn.made.paymentIntents == 4)
        }
    }

    @Test func thePaywallListsWhatIsOnSaleWithStripesPrices() async throws {
        try await Self.run { system, standIn in
            _ = try await CatalogStore(client: system.db.client, logger: TestDatabase.logger).archive("pro.monthly.trial")
            let response = try await system.client.execute(
                uri: "/v1/iap/products", method: .get, headers: [HTTPField.Name("X-Sluice-Key")!: TestCredentials.clientAPIKey])
            #expect(response.status == .ok)
            let products = try #require((try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])?["products"] as? [[String: Any]])
            #expect(products.compactMap { $0["id"] as? String } == ["pro.lifetime", "pro.monthly", "pro.yearly"], "the archived trial is left out")
            let monthly = try #require(products.first { $0["id"] as? String == "pro.monthly" })
            #expect(monthly["access_levels"] as? [String] == ["pro"])
            let price = try #require(monthly["price"] as? [String: Any])
            #expect(price["amount"] as? Int == 999)
            #expect(price["currency"] as? String == "eur")
            #expect(price["interval"] as? String == "month")
        }
    }

    @Test func aSubscriptionGrantingTheSameLevelReplacesTheOldOneOnceItIsPaid() async throws {
        try await Self.run { system, standIn in
            let store = CheckoutStore(client: system.db.client, logger: TestDatabase.logger)
            /// Makes a subscription checkout and has Stripe report it paid and active.
            func subscribe(_ product: String) async throws -> (checkout: String, subscription: String) {
                let (_, made) = try await Self.post(system, ["user_id": "user_switch", "product_id": product])
                let id = try #require(UUID(uuidString: made["transaction_id"] as? String ?? ""))
                let subscription = try #require(try await store.outcome(of: id)?.row.objects.subscription)
                standIn.setStatus(subscription, "active")
                var active = try #require(standIn.object(subscription)) as [String: Any]
                active["latest_invoice"] = (active["latest_invoice"] as? [String: any Sendable])?["id"]
                try await system.stripe("customer.subscription.updated", active, apiVersion: "2025-03-31.basil")
                try await system.drain()
                return (id.uuidString.lowercased(), subscription)
            }
            let monthly = try await subscribe("pro.monthly")
            #expect(try await Self.status(system, monthly.checkout)["status"] as? String == "succeeded")
            let metadataOfFirst = standIn.object(monthly.subscription)?["metadata"] as? [String: String]
            #expect(metadataOfFirst?["replaces_subscription"] == nil, "nothing to replace the first time")

            let yearly = try await subscribe("pro.yearly")
            let metadata = try #require(standIn.object(yearly.subscription)?["metadata"] as? [String: String])
            #expect(metadata["replaces_subscription"] == monthly.subscription)
            let sweep = CheckoutSweepService(
                store: store, stripe: Self.stripe(standIn),
                lease: MaintenanceLease(client: system.db.client, task: "checkout-sweep", owner: "test", logger: TestDatabase.logger),
                interval: .seconds(60), logger: TestDatabase.logger)
            _ = try await sweep.runOnce()
            #expect(standIn.object(monthly.subscription)?["status"] as? String == "canceled")
            #expect(standIn.object(monthly.subscription)?["prorated"] as? Bool == true, "the unused time is credited")
            #expect(standIn.object(yearly.subscription)?["status"] as? String == "active")
            #expect(try await store.dueForReplacing(in: .sandbox).isEmpty, "settled once")
        }
    }

    @Test func aSubscriptionCheckoutSucceedsWhenItsFirstInvoiceIsPaid() async throws {
        try await Self.run { system, standIn in
            let (_, made) = try await Self.post(system, ["user_id": "user_invoice", "product_id": "pro.monthly"])
            let id = try #require(UUID(uuidString: made["transaction_id"] as? String ?? ""))
            let row = try #require(try await CheckoutStore(client: system.db.client, logger: TestDatabase.logger).outcome(of: id)?.row)
            let subscription = try #require(row.objects.subscription)
            let invoice = try #require(row.objects.invoice)
            async let waited = Self.status(system, id.uuidString.lowercased(), wait: 20)
            try await Task.sleep(for: .milliseconds(200))
            // As Stripe sends it: the subscription's metadata copied onto its invoice.
            var paid = StripeObjects.invoice(invoice, subscription: subscription, reason: "subscription_create", periodEnd: Date().addingTimeInterval(30 * 86_400))
            paid["subscription_details"] = ["metadata": (standIn.object(subscription)?["metadata"] as? [String: String]) ?? [:]]
            try await system.stripe("invoice.paid", paid)
            try await system.drain()
            let answer = try await waited
            #expect(answer["status"] as? String == "succeeded", "\(answer)")
            let entitlement = try #require((answer["entitlements"] as? [[String: Any]])?.first)
            #expect(entitlement["product_id"] as? String == "pro.monthly")
            #expect(entitlement["is_active"] as? Bool == true)
            let granted = try await system.db.client.query(
                "SELECT count(*) FROM outgoing_events WHERE type = 'entitlement.granted' AND user_id = 'user_invoice'", logger: TestDatabase.logger)
            for try await count in granted.decode(Int64.self) { #expect(count == 1, "announced once") }
        }
    }

    /// Sluice's own findings in Stripe's answers are no outage: before, each was a `503` with
    /// `Retry-After` forever, and the free subscription's id (made at Stripe) was never kept.
    @Test func aFreeFirstInvoiceIsAnsweredAndAPriceWithoutAmountIsRefusedNotRetried() async throws {
        try await Self.run { system, standIn in
            standIn.addPrice("price_free", amount: 0, interval: "month")
            standIn.addPrice("price_tiered", amount: nil)
            let catalog = CatalogStore(client: system.db.client, logger: TestDatabase.logger)
            _ = try await catalog.add(CatalogProduct(id: "pro.free", type: .autoRenewable, stripePrice: "price_free", accessLevels: ["pro"]))
            _ = try await catalog.add(CatalogProduct(id: "pack.tiered", type: .nonConsumable, stripePrice: "price_tiered", accessLevels: ["pro"]))

            // Nothing to confirm: the ids are kept, the answer has no client secret, and asking
            // again answers the same checkout.
            let (created, made) = try await Self.post(system, ["user_id": "user_free", "product_id": "pro.free"])
            #expect(created == .created, "\(made)")
            #expect(made["kind"] as? String == "subscription")
            #expect(made["client_secret"] == nil, "\(made)")
            let id = try #require(UUID(uuidString: made["transaction_id"] as? String ?? ""))
            let row = try #require(try await CheckoutStore(client: system.db.client, logger: TestDatabase.logger).outcome(of: id)?.row)
            #expect(row.objects.subscription != nil && row.customer != nil)
            let (again, reused) = try await Self.post(system, ["user_id": "user_free", "product_id": "pro.free"])
            #expect(again == .ok && reused["transaction_id"] as? String == made["transaction_id"] as? String && reused["reused"] as? Bool == true)
            #expect(standIn.made.subscriptions == 1)

            let (refused, body) = try await Self.post(system, ["user_id": "user_tiered", "product_id": "pack.tiered"])
            #expect(refused == .conflict, "\(body)")
            #expect((body["error"] as? [String: Any])?["code"] as? String == "price_without_amount", "\(body)")
            #expect(standIn.made.paymentIntents == 0)

            // A pack sold at a monthly price, a subscription at a one-time price: refused, not sold
            // as what the catalog says it is not.
            standIn.addPrice("price_once", amount: 499)
            _ = try await catalog.add(CatalogProduct(id: "pack.monthly_price", type: .consumable, stripePrice: "price_free"))
            _ = try await catalog.add(CatalogProduct(id: "pro.once_price", type: .autoRenewable, stripePrice: "price_once", accessLevels: ["pro"]))
            for product in ["pack.monthly_price", "pro.once_price"] {
                let (mismatch, answer) = try await Self.post(system, ["user_id": "user_mismatch", "product_id": product])
                #expect(mismatch == .conflict && (answer["error"] as? [String: Any])?["code"] as? String == "price_mismatch", "\(answer)")
            }
            #expect(standIn.made.paymentIntents == 0 && standIn.made.subscriptions == 1)
        }
    }

    static func stripe(_ standIn: StripeCheckoutStandIn) -> StripeCheckoutAPI {
        StripeCheckoutAPI(
            call: ProviderCall(http: .shared, provider: "Stripe", maximumAttempts: 1), apiKey: StripeCheckoutStandIn.apiKey, apiVersion: nil,
            baseURL: standIn.baseURL)
    }
}
