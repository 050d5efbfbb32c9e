// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import NIOCore
import PostgresNIO
import Shared
import Synchronization
import NIOHTTP1

/// How fast a real `worker run` process forwards a backlog of deliveries to a local HTTP sink, and,
/// as the baseline in the same run, how fast the same POSTs go from one HTTP client straight to
/// the same sink with as many in flight (no queue, no signing, no database).
@main
struct ForwardBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ForwardBenchmark", abstract: "Deliveries per second by `worker run` to a local sink (needs DATABASE_URL).")

    @Option(help: "Deliveries in the backlog.") var deliveries = 20_000
    @Option(help: "Deliveries in flight (WORKER_CONCURRENCY, and the baseline's).") var concurrency = 64
    @Option(help: "Bytes of each forwarded body.") var bodyBytes = 1_500
    @Option(help: "The worker binary.") var worker = ".build-release/release/worker"

    func run() async throws {
        guard let text = ProcessInfo.processInfo.environment["DATABASE_URL"] else {
            throw ValidationError("DATABASE_URL is required (scripts/with-postgres sets one)")
        }
        let server = try DatabaseURL(text)
        let body = ByteBuffer(string: #"{"signedPayload":""# + String(repeating: "x", count: max(bodyBytes - 19, 0)) + #""}"#)
        print("forward: \(deliveries) deliveries of \(body.readableBytes) B, \(concurrency) in flight, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        try await LocalSink.with { sink in
            let baseline = try await directPosts(to: sink.url, body: body, counter: sink)
            let sluice = try await workerRun(server: server, target: sink.url, body: body, counter: sink)
            print(String(format: "  worker run / direct client: %.2fx", sluice / baseline))
        }
    }

    /// The baseline: the same POSTs from one client, `concurrency` at a time.
    private func directPosts(to url: String, body: ByteBuffer, counter: LocalSink) async throws -> Double {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: concurrency)
        let before = counter.count
        let started = ContinuousClock.now
        try await HTTPClient.withHTTPClient(configuration: configuration) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<concurrency {
                    // Lane `lane` sends every `concurrency`th request: `deliveries` in all.
                    let share = deliveries / concurrency + (lane < deliveries % concurrency ? 1 : 0)
                    group.addTask {
                        for _ in 0..<share {
                            var request = HTTPClientRequest(url: url)
                            request.method = .POST
                            request.headers.add(name: "Content-Type", value: "application/json")
                            request.body = .bytes(body)
                            let response = try await client.execute(request, timeout: .seconds(10))
                            _ = try await response.body.collect(upTo: 1 << 16)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        return report("direct HTTP client (baseline)", count: counter.count - before, since: started)
    }

    /// Sluice: a fresh database holding the backlog, and a `worker run` forwarding it.
    private func workerRun(server: DatabaseURL, target: String, body: ByteBuffer, counter: LocalSink) async throws -> Double {
        let logger = { var l = Logger(label: "bench"); l.logLevel = .error; return l }()
        var url = server
        url.database = "sluice_forward_\(UInt32.random(in: 0...UInt32.max))"
        let name = url.database
        try await DatabaseSession.with(server, logger: logger) { try await $0.query("CREATE DATABASE \(unescaped: name)", logger: logger) }
        defer {
            Task { try? await DatabaseSession.with(server, logger: logger) { try await $0.query("DROP DATABASE \(unescaped: name) WITH (FORCE)", logger: logger) } }
        }
        let count = deliveries
        try await DatabaseSession.with(url, logger: logger) { client in
            try await Migrator(client: client, logger: logger).migrate(directory: Self.sqlDirectory())
            try await client.query(
                """
                INSERT INTO deliveries (event_id, source, type, external_id, target, payload)
                SELECT n, 'apple', 'DID_RENEW', gen_random_uuid()::text, \(target), \(body)
                FROM generate_series(1, \(count)) AS n
                """, logger: logger)
            try await client.query("VACUUM ANALYZE deliveries", logger: logger)
        }
        let before = counter.count
        let process = Process()
        process.executableURL = URL(fileURLWithPath: worker)
        process.arguments = ["run"]
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = url.urlString
        environment["WORKER_CONCURRENCY"] = "\(concurrency)"
        environment["FORWARD_SECRET"] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        environment["LOG_LEVEL"] = "error"
        environment["METRICS_PORT"] = "0"
        process.environment = environment
        let started = ContinuousClock.now
        try process.run()
        defer { process.terminate(); process.waitUntilExit() }
        let done = try await DatabaseSession.with(url, logger: logger) { client -> Int64 in
            while true {
                var done: Int64 = 0
                for try await value in try await client.query(
                    "SELECT count(*) FROM deliveries WHERE state = 'done'", logger: logger).decode(Int64.self) { done = value }
                if done >= Int64(count) || started.duration(to: .now) > .seconds(600) { return done }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        let received = counter.count - before
        let rate = report("worker run (queue, signing, HTTP)", count: Int(done), since: started)
        print("    sink received \(received) for \(done) done (more means a retried delivery)")
        return rate
    }

    private func report(_ label: String, count: Int, since started: ContinuousClock.Instant) -> Double {
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = Double(count) / seconds
        print(String(format: "  %@: %8.0f deliveries/s (%d in %.1f s)", label, rate, count, seconds))
        return rate
    }

    static func sqlDirectory() -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("sql")
    }
}

/// A local HTTP server that answers every `POST /hook` with `204` and counts them.
final class LocalSink: Sendable {
    private let received = Atomic(0)
    let url: String

    private init(url: String) { self.url = url }

    var count: Int { received.load(ordering: .relaxed) }

    static func with(_ body: @Sendable @escaping (LocalSink) async throws -> Void) async throws {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let box = Mutex<LocalSink?>(nil)
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            _ = try await request.body.collect(upTo: 1 << 20)
            box.withLock { $0 }?.received.add(1, ordering: .relaxed)
            return Response(status: .noContent)
        }
        var logger = Logger(label: "sink")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            }, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService(gracefulShutdownSignals: []) }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next(), port > 0 else { throw CancellationError() }
            let sink = LocalSink(url: "http://127.0.0.1:\(port)/hook")
            box.withLock { $0 = sink }
            defer { group.cancelAll() }
            try await body(sink)
        }
    }
}
