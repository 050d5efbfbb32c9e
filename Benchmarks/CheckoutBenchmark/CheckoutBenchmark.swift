// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import AsyncHTTPClient
import DevSupport
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import PostgresNIO

/// Web checkout's two promises (issue 39), measured against a running `ingest` whose Stripe hangs
/// (`scripts/bench-checkout` starts it, with a Stripe that accepts connections and never answers):
///
/// 1. **`?wait=` answers within milliseconds of the commit.** For each trial a checkout row is
///    written as the checkout's create would, a `GET /v1/iap/transactions/{id}?wait=10` starts,
///    and then the payment's transaction is committed as the worker's apply does; the delay is
///    from that commit's return to the answer. Baseline in the same run: a plain `GET` of a settled
///    checkout (the request's own cost).
/// 2. **A hung Stripe never slows a webhook.** Signed Stripe webhooks at a steady rate, first
///    alone, then while `checkouts` apps keep asking for checkouts that hang on Stripe until
///    their timeout (each honouring the `503`'s `Retry-After`, as an app does); webhook latency
///    p50/p99 per phase, and their ratio.
@main
struct CheckoutBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "CheckoutBenchmark", abstract: "Checkout wait latency and webhook latency under a hung Stripe.")

    @Option(help: "ingest's base URL.") var url = "http://127.0.0.1:8080"
    @Option(name: .customLong("database-url")) var databaseURL: String
    @Option(name: .customLong("api-key"), help: "A key from ingest's API_KEYS.") var apiKey: String
    @Option(name: .customLong("webhook-secret"), help: "ingest's STRIPE_WEBHOOK_SECRETS.") var webhookSecret: String
    @Option(help: "Wait trials.") var trials = 100
    @Option(help: "Seconds per webhook phase.") var seconds: Double = 10
    @Option(help: "Webhooks per second.") var rate: Double = 50
    @Option(help: "Concurrent checkout requests during the hang.") var checkouts = 32

    func run() async throws {
        var logger = Logger(label: "bench")
        logger.logLevel = .error
        let components = URLComponents(string: databaseURL)!
        let config = PostgresClient.Configuration(
            host: components.host ?? "127.0.0.1", port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password, database: String(components.path.dropFirst()), tls: .disable)
        let database = PostgresClient(configuration: config, backgroundLogger: logger)
        var http = HTTPClient.Configuration(timeout: .init(connect: .seconds(5), read: .seconds(60)))
        http.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = checkouts + 8
        try await HTTPClient.withHTTPClient(configuration: http) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await database.run() }
                defer { group.cancelAll() }
                try await waits(client, database, logger)
                try await webhooks(client)
            }
        }
    }

    // MARK: 1. ?wait=

    private func waits(_ client: HTTPClient, _ database: PostgresClient, _ logger: Logger) async throws {
        var delays: [Double] = []
        var plain: [Double] = []
        for trial in 0..<trials {
            let id = UUID()
            let user = "bench_wait_\(trial)_\(UUID().uuidString.prefix(8))"
            let intent = "pi_bench_\(id.uuidString.prefix(12))"
            try await database.query(
                """
                INSERT INTO checkouts (id, user_id, product_id, environment, kind, terms, expires_at, payment_intent, client_secret, stripe_customer)
                VALUES (\(id), \(user), 'bench.lifetime', 'sandbox', 'payment', 't', now() + interval '1 day', \(intent), \(intent + "_secret"), 'cus_bench')
                """, logger: logger)
            let answered = try await withThrowingTaskGroup(of: Double.self) { group in
                group.addTask {
                    _ = try await self.get(client, "/v1/iap/transactions/\(id.uuidString.lowercased())?wait=10", expect: "succeeded")
                    return Self.now()
                }
                // Let the request reach its LISTEN wait before the commit.
                try await Task.sleep(for: .milliseconds(150))
                try await database.query(
                    """
                    INSERT INTO transactions (source, provider_transaction_id, user_id, product_id, status, environment, purchased_at, last_event_time)
                    VALUES ('web_checkout', \(intent), \(user), 'bench.lifetime', 'succeeded', 'sandbox', now(), now())
                    """, logger: logger)
                let committed = Self.now()
                let answeredAt = try await group.next()!
                return answeredAt - committed
            }
            delays.append(answered * 1000)
            let start = Self.now()
            _ = try await get(client, "/v1/iap/transactions/\(id.uuidString.lowercased())", expect: "succeeded")
            plain.append((Self.now() - start) * 1000)
        }
        print(String(
            format: "RESULT checkout-wait trials=%d after_commit_p50_ms=%.2f p99_ms=%.2f max_ms=%.2f plain_get_p50_ms=%.2f ratio_p50=%.2f",
            trials, Self.percentile(delays, 0.5), Self.percentile(delays, 0.99), delays.max() ?? 0, Self.percentile(plain, 0.5),
            Self.percentile(delays, 0.5) / max(Self.percentile(plain, 0.5), 0.001)))
    }

    private func get(_ client: HTTPClient, _ path: String, expect status: String) async throws -> Data {
        var request = HTTPClientRequest(url: url + path)
        request.headers.add(name: "X-Sluice-Key", value: apiKey)
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = Data(buffer: try await response.body.collect(upTo: 1 << 20))
        guard response.status == .ok, String(decoding: body, as: UTF8.self).contains("\"status\":\"\(status)\"") else {
            throw ValidationError("GET \(path) answered \(response.status.code): \(String(decoding: body, as: UTF8.self).prefix(300))")
        }
        return body
    }

    // MARK: 2. Webhooks while Stripe hangs

    private func webhooks(_ client: HTTPClient) async throws {
        let alone = try await webhookPhase(client)
        let (underHang, checkoutAnswers) = try await withThrowingTaskGroup(of: ([Double], [Int]).self) { group in
            let end = Self.now() + seconds
            for n in 0..<checkouts {
                group.addTask { ([], try await self.checkoutLoop(client, until: end, user: "bench_hang_\(n)")) }
            }
            group.addTask { (try await self.webhookPhase(client), []) }
            var latencies: [Double] = []
            var statuses: [Int] = []
            for try await (l, s) in group {
                latencies += l
                statuses += s
            }
            return (latencies, statuses)
        }
        let refused = checkoutAnswers.filter { $0 == 503 }.count
        print(String(
            format: "RESULT checkout-hang phase=alone webhooks=%d p50_ms=%.2f p99_ms=%.2f", alone.count, Self.percentile(alone, 0.5), Self.percentile(alone, 0.99)))
        print(String(
            format: "RESULT checkout-hang phase=stripe_hung webhooks=%d p50_ms=%.2f p99_ms=%.2f checkout_requests=%d checkout_503=%d p99_ratio=%.2f",
            underHang.count, Self.percentile(underHang, 0.5), Self.percentile(underHang, 0.99), checkoutAnswers.count, refused,
            Self.percentile(underHang, 0.99) / max(Self.percentile(alone, 0.99), 0.001)))
    }

    /// Signed `payment_intent.succeeded` webhooks at ``rate`` for ``seconds``: each one's latency in ms.
    private func webhookPhase(_ client: HTTPClient) async throws -> [Double] {
        let count = Int(seconds * rate)
        let start = Self.now()
        return try await withThrowingTaskGroup(of: Double.self) { group in
            for n in 0..<count {
                let due = start + Double(n) / rate
                let wait = due - Self.now()
                if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
                group.addTask {
                    let id = "evt_bench_\(UUID().uuidString.prefix(16))"
                    let body = try SampleStripeEvents.event(
                        id: id, type: "payment_intent.succeeded", created: Date(),
                        object: ["id": "pi_\(id)", "object": "payment_intent", "amount": 999, "amount_received": 999, "currency": "eur",
                                 "status": "succeeded", "metadata": ["user_id": "bench_webhook", "product_id": "bench.lifetime"]],
                        previousAttributes: nil, livemode: false, apiVersion: "2025-03-31.basil", account: nil)
                    var request = HTTPClientRequest(url: self.url + "/v1/webhooks/stripe")
                    request.method = .POST
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.headers.add(name: "Stripe-Signature", value: StripeSigner.header(body: body, secret: self.webhookSecret))
                    request.body = .bytes(ByteBuffer(data: body))
                    let sent = Self.now()
                    let response = try await client.execute(request, timeout: .seconds(30))
                    _ = try await response.body.collect(upTo: 1 << 16)
                    guard response.status == .ok else { throw ValidationError("a webhook was answered \(response.status.code)") }
                    return (Self.now() - sent) * 1000
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    /// Checkout requests, one after another, until `end`: each one's status.
    private func checkoutLoop(_ client: HTTPClient, until end: Double, user: String) async throws -> [Int] {
        var statuses: [Int] = []
        var n = 0
        while Self.now() < end {
            var request = HTTPClientRequest(url: url + "/v1/iap/payment-intents")
            request.method = .POST
            request.headers.add(name: "X-Sluice-Key", value: apiKey)
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: #"{"user_id":"\#(user)_\#(n)","product_id":"bench.lifetime"}"#))
            let response = try await client.execute(request, timeout: .seconds(60))
            _ = try await response.body.collect(upTo: 1 << 16)
            statuses.append(Int(response.status.code))
            n += 1
            // As an app does: a 503 says when to try again.
            if let after = response.headers.first(name: "Retry-After").flatMap(Double.init) {
                try await Task.sleep(for: .milliseconds(Int(after * 1000)))
            }
        }
        return statuses
    }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }
}
