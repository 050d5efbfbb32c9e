// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import AsyncHTTPClient
import DevSupport
import Foundation
import NIOCore
import Synchronization
import NIOFoundationCompat
import NIOHTTP1

/// End-to-end latency of a running `ingest` + `worker`: signed Stripe purchases (one new user
/// each) are offered at a steady rate (open loop: each is sent on schedule whether or not earlier
/// ones were answered); for `--samples-per-second` of them, the time from its `2xx` until the
/// user's entitlement is active through `GET /v1/iap/entitlements` (polled after 1 ms, then less
/// often as the wait grows — at most every 10 % of the time waited — so slow reads do not pile up).
/// `scripts/bench-e2e` runs it with the worker's LISTEN/NOTIFY on and off.
@main
struct LatencyBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "LatencyBenchmark", abstract: "2xx → visible latency at a steady rate.")

    @Option(help: "ingest's base URL.") var url = "http://127.0.0.1:8080"
    @Option(help: "Stripe endpoint secret.") var secret = "whsec_bench_secret"
    @Option(help: "API key of the read API.") var apiKey = "bench_key_0123456789abcdef0123456789ab"
    @Option(help: "Events offered per second.") var rate: Double = 500
    @Option(help: "Seconds of load.") var seconds: Double = 20
    @Option(help: """
        Events a second whose visibility is measured, spread evenly (every rate/n-th event). The read \
        API's polling is load of its own, so it does not grow with the rate measured.
        """) var samplesPerSecond: Double = 10
    @Option(help: "A label for the RESULT line.") var label = "run"

    func run() async throws {
        let count = Int(rate * seconds)
        let runID = UUID().uuidString.prefix(8).lowercased()
        let events = try (0..<count).map { index -> (user: String, body: ByteBuffer, signature: String) in
            let user = "lat_\(runID)_\(index)"
            let body = try SampleStripeEvents.event(
                id: "evt_lat_\(runID)_\(index)", type: "payment_intent.succeeded",
                object: SampleStripeEvents.paymentIntent(id: "pi_lat_\(runID)_\(index)", userID: user, customer: "cus_\(user)"))
            return (user, ByteBuffer(data: body), StripeSigner.header(body: body, secret: secret))
        }
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(5), read: .seconds(30)))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 256
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let samples = Samples()
        let interval = Duration.seconds(1 / rate)
        let start = ContinuousClock.now + .milliseconds(100)
        let sampleEvery = max(1, Int((rate / samplesPerSecond).rounded()))
        await withDiscardingTaskGroup { group in
            for (index, event) in events.enumerated() {
                let due = start + interval * index
                try? await Task.sleep(until: due)
                group.addTask {
                    await self.send(event, measureVisibility: index % sampleEvery == 0, client: client, samples: samples)
                }
            }
        }
        try await client.shutdown()
        let elapsed = start.duration(to: .now)
        let report = samples.report()
        let offered = Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        print(String(
            format: "%@: offered %.0f events/s; 2xx p50 %.2f ms p99 %.2f ms; 2xx → visible p50 %.2f ms p99 %.2f ms max %.2f ms (%d sampled); errors %d, never visible %d",
            label, offered, report.ack.p50, report.ack.p99, report.visible.p50, report.visible.p99, report.visible.max,
            report.visible.count, report.errors, report.neverVisible))
        print(String(
            format: "RESULT e2e label=%@ offered=%.0f ack_p50=%.2f ack_p99=%.2f visible_p50=%.2f visible_p99=%.2f sampled=%d errors=%d never_visible=%d",
            label, offered, report.ack.p50, report.ack.p99, report.visible.p50, report.visible.p99, report.visible.count,
            report.errors, report.neverVisible))
    }

    private func send(
        _ event: (user: String, body: ByteBuffer, signature: String), measureVisibility: Bool, client: HTTPClient, samples: Samples
    ) async {
        var request = HTTPClientRequest(url: url + "/v1/webhooks/stripe")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Stripe-Signature", value: event.signature)
        request.body = .bytes(event.body)
        let sent = ContinuousClock.now
        do {
            let response = try await client.execute(request, timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 1 << 16)
            guard response.status.code == 200 else { return samples.countError() }
        } catch {
            return samples.countError()
        }
        let acknowledged = ContinuousClock.now
        samples.addAcknowledgement(sent.duration(to: acknowledged))
        guard measureVisibility else { return }
        var read = HTTPClientRequest(url: url + "/v1/iap/entitlements?user_id=\(event.user)")
        read.headers.add(name: "X-Sluice-Key", value: apiKey)
        while acknowledged.duration(to: .now) < .seconds(10) {
            if let response = try? await client.execute(read, timeout: .seconds(10)),
               let body = try? await response.body.collect(upTo: 1 << 20),
               response.status.code == 200, String(buffer: body).contains("\"is_active\":true")
            {
                return samples.addVisibility(acknowledged.duration(to: .now))
            }
            try? await Task.sleep(for: max(.milliseconds(1), acknowledged.duration(to: .now) / 10))
        }
        samples.countNeverVisible()
    }
}

/// Latencies gathered by concurrent senders.
final class Samples: Sendable {
    struct Percentiles { var p50 = 0.0, p99 = 0.0, max = 0.0, count = 0 }
    private struct State { var ack: [Double] = [], visible: [Double] = [], errors = 0, neverVisible = 0 }
    private let state = Mutex(State())

    func addAcknowledgement(_ duration: Duration) { state.withLock { $0.ack.append(Self.milliseconds(duration)) } }
    func addVisibility(_ duration: Duration) { state.withLock { $0.visible.append(Self.milliseconds(duration)) } }
    func countError() { state.withLock { $0.errors += 1 } }
    func countNeverVisible() { state.withLock { $0.neverVisible += 1 } }

    func report() -> (ack: Percentiles, visible: Percentiles, errors: Int, neverVisible: Int) {
        state.withLock { (Self.percentiles($0.ack), Self.percentiles($0.visible), $0.errors, $0.neverVisible) }
    }

    private static func percentiles(_ values: [Double]) -> Percentiles {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return Percentiles() }
        func at(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        return Percentiles(p50: at(0.5), p99: at(0.99), max: sorted.last!, count: sorted.count)
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }
}
