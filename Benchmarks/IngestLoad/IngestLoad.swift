// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import AsyncHTTPClient
import DevSupport
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// A closed-loop load generator for a running `ingest`: `connections` clients each send signed
/// Stripe events (unique ids, ~2 KB) or test-PKI Apple notifications back to back for a fixed
/// time; or, for wrk, files of those or of Google Play pushes with their OIDC token (and the key
/// set ingest must fetch, `jwks.json`, beside them). Reports requests/s, p50/p99/p999 latency, errors, and the target's peak RSS when given
/// its pid. `scripts/bench-ingest` runs it against a fresh ingest with the pgbench baseline.
@main
struct IngestLoad: AsyncParsableCommand {
    enum Kind: String, ExpressibleByArgument { case stripe, apple, play }

    /// What `scripts/bench-ingest` gives ingest as `GOOGLE_PUSH_AUDIENCE` and `GOOGLE_PUSH_SERVICE_ACCOUNT`.
    static let playAudience = "https://sluice.bench/v1/webhooks/google-play"
    static let playAccount = "play-push@sluice-bench.iam.gserviceaccount.com"

    static let configuration = CommandConfiguration(commandName: "IngestLoad", abstract: "Load generator for ingest.")

    @Option(help: "ingest's base URL.") var url = "http://127.0.0.1:8080"
    @Option(help: "stripe, apple, or play (with --wrk-requests only).") var kind: Kind = .stripe
    @Option(help: "Concurrent connections.") var connections = 32
    @Option(help: "Seconds of load.") var seconds: Double = 10
    @Option(help: "Stripe endpoint secret.") var secret = "whsec_bench_secret"
    @Option(help: "Development PKI folder, for apple.") var pki = ".dev/pki"
    @Option(help: "ingest's pid, to report its peak RSS.") var pid: Int?
    @Option(help: "Target rate in requests/s for all connections together (open loop); 0 = as fast as possible.") var rate: Double = 0
    @Option(help: "Requests signed before the timed window (spread over the connections), so the generator spends its CPU on sending; more are made on the fly.")
    var presigned = 40_000
    @Option(help: "Instead of sending, write this many signed requests for wrk (Benchmarks/wrk/ingest.lua) into --wrk-directory, split over --wrk-threads files.")
    var wrkRequests: Int?
    @Option(help: "Where --wrk-requests writes its files.") var wrkDirectory = "wrk-requests"
    @Option(help: "Files for --wrk-requests, one per wrk thread.") var wrkThreads = 2

    func validate() throws {
        guard kind != .play || wrkRequests != nil else { throw ValidationError("--kind play writes wrk requests only (--wrk-requests)") }
    }

    func run() async throws {
        if let wrkRequests { return try writeWrkRequests(count: wrkRequests) }
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(5), read: .seconds(30)))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let signer = kind == .apple ? AppleJWSSigner(pki: try ApplePKI.load(from: URL(fileURLWithPath: pki))) : nil
        let runID = UUID().uuidString.prefix(8).lowercased()
        let interval = rate > 0 ? Duration.seconds(Double(connections) / rate) : .zero
        let (kind, url, secret) = (self.kind, self.url, self.secret)
        let perConnection = presigned / max(connections, 1)
        let prepared: [[HTTPClientRequest]] = try (0..<connections).map { connection in
            try (0..<perConnection).map { sequence in
                try Self.request(kind: kind, url: url, secret: secret, signer: signer, bearer: nil, id: "\(runID)_\(connection)_p\(sequence)")
            }
        }

        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let results = try await withThrowingTaskGroup(of: (latencies: [Double], errors: Int).self) { group in
            for connection in 0..<connections {
                group.addTask {
                    var latencies: [Double] = []
                    var errors = 0
                    var sequence = 0
                    var next = ContinuousClock.now
                    while ContinuousClock.now < deadline {
                        if interval > .zero {
                            next += interval
                            try? await Task.sleep(until: next)
                        }
                        sequence += 1
                        let request = sequence <= prepared[connection].count
                            ? prepared[connection][sequence - 1]
                            : try Self.request(kind: kind, url: url, secret: secret, signer: signer, bearer: nil, id: "\(runID)_\(connection)_\(sequence)")
                        let started = ContinuousClock.now
                        do {
                            let response = try await client.execute(request, timeout: .seconds(30))
                            _ = try await response.body.collect(upTo: 1 << 16)
                            if response.status.code != 200 { errors += 1 }
                        } catch {
                            errors += 1
                        }
                        let elapsed = started.duration(to: .now)
                        latencies.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
                    }
                    return (latencies, errors)
                }
            }
            return try await group.reduce(into: (latencies: [Double](), errors: 0)) {
                $0.latencies += $1.latencies
                $0.errors += $1.errors
            }
        }
        try await client.shutdown()
        let sorted = results.latencies.sorted()
        func percentile(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        let rss = pid.flatMap(ProcessMemory.peakRSSMiB).map { String(format: "%.1f MiB", $0) } ?? "n/a"
        print(String(
            format: "%@ %d conn: %.0f req/s, p50 %.2f ms, p99 %.2f ms, p999 %.2f ms, errors %d of %d, ingest peak RSS %@",
            kind.rawValue, connections, Double(sorted.count) / seconds, percentile(0.5), percentile(0.99), percentile(0.999),
            results.errors, sorted.count, rss))
    }

    /// Writes signed requests for wrk, one file per wrk thread: the path on the first line, then
    /// per request the `Stripe-Signature` value (`Bearer …` for Play, `-` for Apple) on one line
    /// and the body on the next. For Play, the key set that signed the token is `jwks.json` beside them.
    private func writeWrkRequests(count: Int) throws {
        let signer = kind == .apple ? AppleJWSSigner(pki: try ApplePKI.load(from: URL(fileURLWithPath: pki))) : nil
        let runID = UUID().uuidString.prefix(8).lowercased()
        let directory = URL(fileURLWithPath: wrkDirectory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var bearer: String?
        if kind == .play {
            let google = try GoogleOIDCStandIn()
            try google.keySetJSON().write(to: directory.appendingPathComponent("jwks.json"))
            bearer = "Bearer " + (try google.idToken(audience: Self.playAudience, email: Self.playAccount))
        }
        for thread in 0..<wrkThreads {
            var lines: [String] = []
            for sequence in stride(from: thread, to: count, by: wrkThreads) {
                let signed = try Self.signed(kind: kind, secret: secret, signer: signer, bearer: bearer, id: "\(runID)_w\(sequence)")
                let body = String(decoding: signed.body, as: UTF8.self)
                precondition(!body.contains("\n"), "bodies are written one per line")
                if lines.isEmpty { lines.append(signed.path) }
                lines += [signed.header ?? "-", body]
            }
            try (lines.joined(separator: "\n") + "\n")
                .write(to: directory.appendingPathComponent("requests-\(thread + 1).txt"), atomically: true, encoding: .utf8)
        }
    }

    /// One signed event: the path it goes to, its `Stripe-Signature` (Stripe) or `Authorization`
    /// (Play) header, and its body.
    static func signed(kind: Kind, secret: String, signer: AppleJWSSigner?, bearer: String?, id: String) throws
        -> (path: String, header: String?, body: Data)
    {
        switch kind {
        case .stripe:
            let body = try SampleStripeEvents.event(
                id: "evt_\(id)", type: "payment_intent.succeeded",
                object: SampleStripeEvents.paymentIntent(id: "pi_\(id)").merging(["description": String(repeating: "x", count: 1_400)]) { $1 })
            return ("/v1/webhooks/stripe", StripeSigner.header(body: body, secret: secret), body)
        case .apple:
            let transaction = SampleAppleTransaction(transactionId: "\(abs(id.hashValue))", appAccountToken: UUID().uuidString.lowercased())
            let body = try signer!.notificationBody(
                type: "DID_RENEW", transaction: transaction, renewal: SampleAppleRenewalInfo(originalTransactionId: transaction.transactionId))
            return ("/v1/webhooks/appstore-notifications?sandbox=true", nil, body)
        case .play:
            let body = try SamplePlayNotifications.push(SamplePlayNotifications.subscription(2, token: "tok_\(id)"), messageID: id)
            return ("/v1/webhooks/google-play", bearer, body)
        }
    }

    static func request(kind: Kind, url: String, secret: String, signer: AppleJWSSigner?, bearer: String?, id: String) throws -> HTTPClientRequest {
        let signed = try signed(kind: kind, secret: secret, signer: signer, bearer: bearer, id: id)
        var request = HTTPClientRequest(url: url + signed.path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if let header = signed.header {
            request.headers.add(name: kind == .play ? "Authorization" : "Stripe-Signature", value: header)
        }
        request.body = .bytes(ByteBuffer(data: signed.body))
        return request
    }
}
