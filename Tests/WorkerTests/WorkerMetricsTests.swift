// SPDX-License-Identifier: Apache-2.0
import Foundation
import HummingbirdTesting
import NIOCore
import Shared
import Testing
import TestSupport

@testable import Worker

/// The worker's `/metrics` and `/healthz` on a real PostgreSQL: attempts by outcome, queue gauges.
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
                port: 0, metrics: metrics, statistics: QueueStatistics(client: db.client, logger: logger), logger: logger)
            try await app.test(.router) { client in
                let health = try await client.execute(uri: "/healthz", method: .get)
                #expect(health.status == .ok)
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
}
