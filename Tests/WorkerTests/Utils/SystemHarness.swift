// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import DevSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import Logging
import Shared
import Testing
import TestSupport

@testable import Ingest
@testable import Worker
import NIOFoundationCompat
import PostgresNIO

/// The whole path of an event, for real: signed requests to the `ingest` application, the
/// worker's handlers applying what it stored, and the read API — on a fresh PostgreSQL database.
struct SystemHarness: Sendable {
    let client: any TestClientProtocol
    let db: TestDatabase
    /// The events pool.
    let pool: WorkerPool
    /// The deliveries pool, which forwards applied Apple notifications.
    let deliveries: WorkerPool
    /// The metrics both pools and the forwarder record.
    let metrics: WorkerMetrics

    /// The worker's environment in these tests: three attempts, no backoff.
    static let workerEnvironment = [
        "MAX_ATTEMPTS": "3", "RETRY_BASE_SECONDS": "0", "RETRY_MAX_SECONDS": "0", "WORKER_CONCURRENCY": "8",
    ]

    /// - Parameters:
    ///   - worker: worker variables (FORWARD_TARGETS, …) over ``workerEnvironment``, read by the
    ///     worker's own settings and wired as `worker run` wires them.
    ///   - ingest: ingest variables (READ_API_ENVIRONMENT, …) over the test credentials'.
    static func run(
        worker: [String: String] = [:], ingest: [String: String] = [:], _ body: @Sendable @escaping (SystemHarness) async throws -> Void
    ) async throws {
        try await TestDatabase.with { db in
            let environment = TestCredentials.ingestEnvironment(databaseURL: db.url.urlString).merging(ingest) { $1 }
            var ingestSettings = try IngestSettings(environment: EnvironmentValues(environment))
            // As in IngestHarness: a webhook waits 30 s for its commit, not the product's 5 s. With
            // the suites in parallel on two cores a commit was seen to take longer than 5 s, and a
            // notification was answered 503; that is load, not what these tests check.
            ingestSettings.storeTimeout = .seconds(30)
            let app = try buildApplication(settings: ingestSettings, logger: TestDatabase.logger)
            let settings = try WorkerSettings(environment: EnvironmentValues(
                workerEnvironment.merging(worker) { $1 }.merging(["DATABASE_URL": db.url.urlString]) { $1 }))
            try await DeliveryClients.with(RunCommand.httpConfiguration(settings)) { http in
                let metrics = WorkerMetrics()
                let pools = RunCommand.pools(settings: settings, client: db.client, http: http, metrics: metrics, logger: TestDatabase.logger)
                try await EndpointStore(client: db.client, logger: TestDatabase.logger).syncEnvironmentTargets(
                    settings.forwardTargets.map(\.url), secret: settings.forwardSecret)
                try await app.test(.router) { client in
                    try await body(SystemHarness(client: client, db: db, pool: pools.events, deliveries: pools.deliveries, metrics: metrics))
                }
            }
        }
    }

    // MARK: Sending

    var signer: AppleJWSSigner { TestCredentials.signer }

    /// Posts a signed Apple notification (Sandbox, or Production to the Production endpoint) and
    /// expects it stored.
    func notify(
        _ type: String, _ subtype: String? = nil, transaction: SampleAppleTransaction, renewal: SampleAppleRenewalInfo? = nil,
        at signedDate: Date = Date(), production: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        var transaction = transaction
        transaction.signedDate = signedDate.millisecondsSince1970
        var renewal = renewal
        renewal?.signedDate = signedDate.millisecondsSince1970
        if production {
            transaction.environment = "Production"
            renewal?.environment = "Production"
        }
        let body = try signer.notificationBody(
            type: type, subtype: subtype, transaction: transaction, renewal: renewal, signedDate: signedDate,
            appAppleId: TestCredentials.appAppleID)
        let response = try await client.execute(
            uri: "/v1/webhooks/appstore-notifications" + (production ? "" : "?sandbox=true"), method: .post,
            headers: [.contentType: "application/json"], body: ByteBuffer(data: body))
        #expect(response.status == .ok, "\(String(buffer: response.body))", sourceLocation: sourceLocation)
    }

    /// Posts a StoreKit sync for `userID` (no query parameter: the transaction says its
    /// environment) and expects it accepted.
    func sync(_ transaction: SampleAppleTransaction, userID: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let response = try await postSync(transaction, userID: userID)
        #expect(response.status == .accepted, "\(String(buffer: response.body))", sourceLocation: sourceLocation)
    }

    /// Posts a StoreKit sync for `userID` and returns the answer.
    func postSync(_ transaction: SampleAppleTransaction, userID: String) async throws -> TestResponse {
        let body = try JSONEncoder().encode(["signed_transaction": try signer.sign(transaction), "user_id": userID])
        return try await client.execute(
            uri: "/v1/iap/storekit-transactions", method: .post,
            headers: [HTTPField.Name("X-Sluice-Key")!: TestCredentials.apiKey], body: ByteBuffer(data: body))
    }

    // MARK: Working

    /// How many events one consumer of ``drain(workers:)`` claims and applies at once:
    /// `SLUICE_TEST_BATCH_SIZE`, 1 unless set. `scripts/test` runs the worker's tests a second time
    /// with 16, the default `WORKER_BATCH_SIZE`, so that every test of a path through the handlers
    /// also runs on the batched path (one transaction for several events, read ahead).
    static let batchSize = ProcessInfo.processInfo.environment["SLUICE_TEST_BATCH_SIZE"].flatMap(Int.init).map { max(1, $0) } ?? 1

    /// Runs the worker's event handlers until nothing is runnable, with `workers` concurrent
    /// consumers, each claiming up to ``batchSize`` events at a time as the pool does: several
    /// applied together in one transaction, one alone.
    func drain(workers: Int = 1) async throws {
        try await Self.drain(pool, workers: workers, batchSize: Self.batchSize)
    }

    /// Announces the balance changes not yet announced, as the worker's ``BalanceAnnouncer`` does
    /// every second; returns how many.
    @discardableResult
    func announceBalances() async throws -> Int {
        try await BalanceAnnouncer(
            client: db.client, lease: MaintenanceLease(client: db.client, task: "balance-announce", owner: "test", logger: TestDatabase.logger),
            onCreated: {}, logger: TestDatabase.logger
        ).announce()
    }

    /// Runs the worker's event handlers in batches of up to `batchSize`, one consumer.
    func drain(batchSize: Int) async throws {
        try await Self.drain(pool, workers: 1, batchSize: batchSize)
    }

    /// Runs the worker's event handlers in batches of up to `size` (one transaction each, even
    /// for a batch of one) until nothing is runnable.
    func drainInBatches(size: Int) async throws {
        while true {
            let jobs = try await pool.queue.dequeue(limit: size, owner: "test-batch")
            guard !jobs.isEmpty else { return }
            await pool.executeBatch(jobs)
        }
    }

    /// Runs the forwarder until no delivery is runnable, with `workers` concurrent consumers.
    func forward(workers: Int = 1) async throws {
        try await Self.drain(deliveries, workers: workers)
    }

    private static func drain(_ pool: WorkerPool, workers: Int, batchSize: Int = 1) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    while true {
                        let jobs = try await pool.queue.dequeue(limit: batchSize, owner: "test-\(worker)")
                        guard !jobs.isEmpty else { return }
                        if jobs.count == 1 { await pool.execute(jobs[0]) } else { await pool.executeBatch(jobs) }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    // MARK: Reading

    /// - Parameter query: more of the query, such as `&environment=sandbox`.
    func entitlements(userID: String, query: String = "") async throws -> [[String: Any]] {
        try await read("/v1/iap/entitlements?user_id=\(userID)\(query)", key: "entitlements")
    }

    func transactions(userID: String, limit: Int = 100, query: String = "") async throws -> [[String: Any]] {
        try await read("/v1/iap/transaction-history?user_id=\(userID)&limit=\(limit)\(query)", key: "transactions")
    }

    /// The only entitlement of a user, failing the test when there is not exactly one.
    func entitlement(userID: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        let all = try await entitlements(userID: userID)
        #expect(all.count == 1, "entitlements: \(all)", sourceLocation: sourceLocation)
        return try #require(all.first, sourceLocation: sourceLocation)
    }

    func read(_ uri: String, key: String) async throws -> [[String: Any]] {
        let response = try await client.execute(uri: uri, method: .get, headers: [.authorization: "Bearer \(TestCredentials.apiKey)"])
        #expect(response.status == .ok)
        let object = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
        return object?[key] as? [[String: Any]] ?? []
    }

    /// The outcome recorded for every event, in queue order.
    func outcomes() async throws -> [String] {
        var outcomes: [String] = []
        for try await outcome in try await db.client.query(
            "SELECT outcome FROM applied_events ORDER BY event_id", logger: TestDatabase.logger
        ).decode(String.self) {
            outcomes.append(outcome)
        }
        return outcomes
    }
}

/// A monthly subscription of `user` whose period ends in 30 days.
func subscription(_ id: String, user: String?, product: String = "pro.monthly", purchased: Date = Date(), expires: Date? = nil) -> SampleAppleTransaction {
    SampleAppleTransaction(
        transactionId: id, bundleId: TestCredentials.bundleID, productId: product, purchaseDate: purchased,
        expiresDate: expires ?? purchased.addingTimeInterval(30 * 86_400), appAccountToken: user)
}

/// RFC 3339 as the read API writes it.
func rfc3339(_ date: Date) -> String { date.formatted(.iso8601) }

extension SystemHarness {
    /// Posts a signed Stripe event and expects it stored.
    func stripe(
        _ type: String, _ object: [String: Any], at created: Date = Date(), id: String = "evt_\(UUID().uuidString.prefix(12))",
        account: String? = nil, livemode: Bool = false, apiVersion: String = "2024-06-20", previousAttributes: [String: Any]? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let body = try SampleStripeEvents.event(
            id: id, type: type, created: created, object: object, previousAttributes: previousAttributes, livemode: livemode,
            apiVersion: apiVersion, account: account)
        let response = try await client.execute(
            uri: "/v1/webhooks/stripe", method: .post,
            headers: [.contentType: "application/json", HTTPField.Name("Stripe-Signature")!: StripeSigner.header(body: body, secret: TestCredentials.stripeSecret)],
            body: ByteBuffer(data: body))
        #expect(response.status == .ok, "\(String(buffer: response.body))", sourceLocation: sourceLocation)
    }
}

/// Stripe objects shaped like the API's, with the metadata the checkout side sets.
enum StripeObjects {
    static func metadata(user: String?, product: String?, extra: [String: String] = [:]) -> [String: Any] {
        var metadata: [String: Any] = extra
        metadata["user_id"] = user
        metadata["product_id"] = product
        return metadata
    }

    static func paymentIntent(
        _ id: String, user: String? = "user_1", product: String? = "pro.lifetime", status: String = "succeeded", amount: Int = 4_999,
        customer: String = "cus_1", charge: String? = nil, extra: [String: String] = [:]
    ) -> [String: Any] {
        ["id": id, "object": "payment_intent", "amount": amount, "amount_received": status == "succeeded" ? amount : 0,
         "currency": "eur", "status": status, "customer": customer, "latest_charge": charge ?? NSNull(),
         "metadata": metadata(user: user, product: product, extra: extra)]
    }

    static func subscription(
        _ id: String, status: String = "active", user: String? = "user_1", product: String? = "pro.monthly",
        periodEnd: Date, cancelAtPeriodEnd: Bool = false, canceledAt: Date? = nil, trialEnd: Date? = nil, customer: String = "cus_1"
    ) -> [String: Any] {
        ["id": id, "object": "subscription", "status": status, "customer": customer, "cancel_at_period_end": cancelAtPeriodEnd,
         "canceled_at": canceledAt.map { Int($0.timeIntervalSince1970) } ?? NSNull(),
         "current_period_end": Int(periodEnd.timeIntervalSince1970),
         "trial_end": trialEnd.map { Int($0.timeIntervalSince1970) } ?? NSNull(),
         "items": ["object": "list", "data": [["id": "si_\(id)", "price": ["id": "price_1", "product": "prod_1"]]]],
         "metadata": metadata(user: user, product: product)]
    }

    static func checkoutSession(
        _ id: String, mode: String, paymentStatus: String, paymentIntent: String? = nil, subscription: [String: Any]? = nil,
        user: String? = "user_1", product: String? = "pro.monthly", setupIntent: String? = nil, email: String = "buyer@example.com"
    ) -> [String: Any] {
        ["id": id, "object": "checkout.session", "mode": mode, "payment_status": paymentStatus,
         "payment_intent": paymentIntent ?? NSNull(), "subscription": subscription ?? NSNull(), "customer": "cus_1",
         "setup_intent": setupIntent ?? NSNull(), "amount_total": 999, "currency": "usd",
         "customer_details": ["email": email], "metadata": metadata(user: user, product: product)]
    }

    static func invoice(_ id: String, subscription: String, reason: String, periodEnd: Date, amount: Int = 999, charge: String? = nil) -> [String: Any] {
        ["id": id, "object": "invoice", "billing_reason": reason, "subscription": subscription, "customer": "cus_1",
         "amount_paid": amount, "currency": "usd", "charge": charge ?? NSNull(), "payment_intent": "pi_\(id)",
         "lines": ["object": "list", "data": [["period": ["start": Int(periodEnd.timeIntervalSince1970) - 2_592_000, "end": Int(periodEnd.timeIntervalSince1970)]]]]]
    }

    /// `amountRefunded`: the refunds so far; by default the whole amount when `refunded`, else 100.
    static func charge(_ id: String, paymentIntent: String, refunded: Bool = true, amount: Int = 4_999, amountRefunded: Int? = nil) -> [String: Any] {
        ["id": id, "object": "charge", "payment_intent": paymentIntent, "amount": amount,
         "amount_refunded": amountRefunded ?? (refunded ? amount : 100), "refunded": refunded, "customer": "cus_1"]
    }

    static func dispute(_ id: String, charge: String, paymentIntent: String, status: String = "needs_response") -> [String: Any] {
        ["id": id, "object": "dispute", "charge": charge, "payment_intent": paymentIntent, "status": status, "reason": "fraudulent", "amount": 4_999]
    }
}
