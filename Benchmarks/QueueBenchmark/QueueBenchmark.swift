// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import DevSupport
import Foundation
import Logging
import PostgresNIO
import Shared

/// Drains a backlog of no-op jobs with N concurrent consumers through ``JobQueue`` (dequeue a
/// batch + complete it), and, as the baseline in the same run, the bare `SKIP LOCKED` cycle on a
/// minimal table with the same consumers and batch size. See Benchmarks/README.md.
@main
struct QueueBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "QueueBenchmark",
        abstract: "Queue mechanism drain rate vs. the bare SQL SKIP LOCKED cycle (needs DATABASE_URL).")

    @Option(help: "Jobs in the backlog.") var jobs = 20_000
    @Option(help: "Concurrent consumers (one connection each).") var consumers = 8
    @Option(help: "Jobs claimed per dequeue.") var batch = 25

    func run() async throws {
        guard let text = ProcessInfo.processInfo.environment["DATABASE_URL"] else {
            throw ValidationError("DATABASE_URL is required (scripts/with-postgres sets one)")
        }
        let logger = {
            var logger = Logger(label: "bench")
            logger.logLevel = .error
            return logger
        }()
        let server = try DatabaseURL(text)
        var url = server
        url.database = "sluice_bench_\(UInt32.random(in: 0...UInt32.max))"
        let name = url.database
        try await DatabaseSession.with(server, logger: logger) { try await $0.query("CREATE DATABASE \(unescaped: name)", logger: logger) }
        let (jobs, consumers, batch) = (self.jobs, self.consumers, self.batch)
        let results = try await DatabaseSession.with(url, maximumConnections: consumers + 2, logger: logger) { client in
            try await Migrator(client: client, logger: logger).migrate(directory: Self.migrationsDirectory())
            let baseline = try await Self.bareCycle(client: client, jobs: jobs, consumers: consumers, batch: batch, logger: logger)
            let sluice = try await Self.jobQueueCycle(client: client, jobs: jobs, consumers: consumers, batch: batch, logger: logger)
            return (baseline, sluice)
        }
        try await DatabaseSession.with(server, logger: logger) { try await $0.query("DROP DATABASE \(unescaped: name) WITH (FORCE)", logger: logger) }
        let cores = ProcessInfo.processInfo.activeProcessorCount
        print("queue drain: \(jobs) no-op jobs, \(consumers) consumers, batch \(batch), \(cores) cores")
        print(String(format: "  bare SKIP LOCKED cycle (baseline): %8.0f jobs/s", results.0))
        print(String(format: "  Sluice JobQueue dequeue+complete:  %8.0f jobs/s  (%.2fx baseline)", results.1, results.1 / results.0))
        print(String(format: "RESULT queue-sluice consumers=%d batch=%d jobs_per_s=%.0f bare_jobs_per_s=%.0f", consumers, batch, results.1, results.0))
    }

    static func migrationsDirectory() -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("sql")
    }

    /// The Sluice queue: ``EventStore`` fills it, consumers run ``JobQueue/dequeue(limit:owner:)`` + ``JobQueue/complete(_:)``.
    static func jobQueueCycle(client: PostgresClient, jobs: Int, consumers: Int, batch: Int, logger: Logger) async throws -> Double {
        try await SyntheticEvents.enqueue(jobs, into: EventStore(client: client, logger: logger), prefix: "bench")
        try await client.query("VACUUM ANALYZE events", logger: logger)
        let queue = JobQueue(client: client, name: .events, logger: logger)
        return try await drain(consumers: consumers, expected: jobs) { consumer in
            let claimed = try await queue.dequeue(limit: batch, owner: "bench-\(consumer)")
            guard !claimed.isEmpty else { return 0 }
            return try await queue.complete(claimed).count
        }
    }

    /// The baseline: the two-statement claim/complete cycle on a table with only what it needs.
    static func bareCycle(client: PostgresClient, jobs: Int, consumers: Int, batch: Int, logger: Logger) async throws -> Double {
        try await client.query(
            "CREATE TABLE bare_queue (id bigserial PRIMARY KEY, state text NOT NULL DEFAULT 'pending', run_at timestamptz NOT NULL DEFAULT now(), payload bytea)",
            logger: logger)
        try await client.query("CREATE INDEX bare_queue_runnable ON bare_queue (run_at) WHERE state = 'pending'", logger: logger)
        try await client.query(
            "INSERT INTO bare_queue (payload) SELECT convert_to('{\"id\":\"evt_' || g || '\",\"object\":\"event\"}', 'UTF8') FROM generate_series(1, \(jobs)) g",
            logger: logger)
        try await client.query("VACUUM ANALYZE bare_queue", logger: logger)
        return try await drain(consumers: consumers, expected: jobs) { _ in
            var ids: [Int64] = []
            for try await id in try await client.query(
                """
                UPDATE bare_queue SET state = 'running' WHERE id IN (
                    SELECT id FROM bare_queue WHERE state = 'pending' ORDER BY run_at LIMIT \(batch) FOR UPDATE SKIP LOCKED)
                RETURNING id
                """, logger: logger
            ).decode(Int64.self) {
                ids.append(id)
            }
            guard !ids.isEmpty else { return 0 }
            try await client.query("UPDATE bare_queue SET state = 'done' WHERE id = ANY(\(ids))", logger: logger)
            return ids.count
        }
    }

    /// Runs `consumers` loops of `cycle` until none finds work; returns jobs per second.
    static func drain(consumers: Int, expected: Int, cycle: @escaping @Sendable (Int) async throws -> Int) async throws -> Double {
        let started = ContinuousClock.now
        let done = try await withThrowingTaskGroup(of: Int.self) { group in
            for consumer in 0..<consumers {
                group.addTask {
                    var count = 0
                    while true {
                        let n = try await cycle(consumer)
                        if n == 0 { return count }
                        count += n
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = started.duration(to: .now)
        guard done == expected else { throw ValidationError("drained \(done) of \(expected) jobs") }
        return Double(done) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
