// SPDX-License-Identifier: Apache-2.0
import Foundation
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker
import HTTPTypes

/// The worker's `/metrics`, `/healthz` and `/readyz` on a real PostgreSQL: attempts by outcome, queue gauges.
struct WorkerMetricsTests {
    @Test func metricsCountAttemptsAndSampleTheQueues() async throws {
        try await TestDatabase.with { db async throws in
            let logger = TestDatabase.logger
            let metrics = WorkerMetrics()
            let queue = JobQueue(
                client: db.client, name: .events, configuration: .init(maxAttempts: 1, retry: .init(baseSeconds: 0, maxSeconds: 0)),
                logger: logger)
            let pool = WorkerPool(queue: queue, handlers: [:], configuration: .init(concurrency: 2), metrics: metrics, logger: logger)
            let store = EventStore(client: db.client, logger: logger)
            for index in 0..<3 {
                _ = try await store.insert([
                    EventRecord(source: .stripe, externalID: "evt_m\(index)", type: "charge.refunded", payload: ByteBuffer(string: "{}"))
                ])
            }
            // One job runs without a handler and dies; two stay pending.
            let job = try #require(try await queue.dequeue(limit: 1, owner: "test").first)
            await pool.execute(job)
            try await queue.pause()

            let app = MetricsServer.build(
                port: 0, metrics: metrics, statistics: QueueStatistics(client: db.client, logger: logger),
                readiness: DatabaseReadiness(client: db.client), logger: logger)
            try await app.test(.router) { client in
                let health = try await client.execute(uri: "/healthz", method: .get)
                #expect(health.status == .ok)
                let ready = try await client.execute(uri: "/readyz", method: .get)
                #expect(ready.status == .ok)
                let response = try await client.execute(uri: "/metrics", method: .get)
                #expect(response.status == .ok)
                let text = String(buffer: response.body)
                for line in [
                    #"sluice_worker_jobs_total{queue="events",outcome="dead"} 1"#,
                    #"sluice_worker_jobs_total{queue="events",outcome="done"} 0"#,
                    #"sluice_worker_jobs_total{queue="deliveries",outcome="retry"} 0"#,
                    #"sluice_queue_jobs{queue="events",state="pending"} 2"#,
                    #"sluice_queue_jobs{queue="events",state="dead"} 1"#,
                    #"sluice_queue_jobs{queue="deliveries",state="pending"} 0"#,
                    #"sluice_queue_paused{queue="events"} 1"#,
                    #"sluice_queue_paused{queue="deliveries"} 0"#,
                ] {
                    #expect(text.contains(line), "missing \(line)")
                }
                #expect(text.contains(#"sluice_worker_attempt_duration_seconds_count{queue="events"} 1"#))
                #expect(text.contains(#"sluice_queue_oldest_runnable_age_seconds{queue="events"}"#))
            }
        }
    }

    /// `/readyz` says whether the database answers; `/healthz` does not depend on it, so an outage
    /// makes workers unready without getting them restarted.
    @Test func readinessFollowsTheDatabaseAndLivenessDoesNot() async throws {
        // Port 1 on loopback: nothing listens, connections are refused at once.
        let client = PostgresClient(configuration: .init(
            host: "127.0.0.1", port: 1, username: "postgres", password: nil, database: "postgres", tls: .disable))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            let app = MetricsServer.build(
                port: 0, metrics: WorkerMetrics(), statistics: QueueStatistics(client: client, logger: TestDatabase.logger),
                readiness: DatabaseReadiness(client: client, timeout: .seconds(1)), logger: TestDatabase.logger)
            try await app.test(.router) { http async throws in
                #expect(try await http.execute(uri: "/healthz", method: .get).status == .ok)
                #expect(try await http.execute(uri: "/readyz", method: .get).status == .serviceUnavailable)
            }
            group.cancelAll()
        }
    }
}
