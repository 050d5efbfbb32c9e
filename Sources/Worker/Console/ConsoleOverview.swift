// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import Shared

/// What the overview page shows, read with cheap queries (partial indexes; the last hour only).
struct ConsoleOverview: Sendable {
    struct QueueActivity: Sendable {
        var queue: QueueName
        var depth: QueueStatistics.Depth
        var paused: Bool
        var chart: ActivityChart
    }

    struct Checkpoint: Sendable {
        var stream: String
        var checkpoint: Date
        var lastSuccessAt: Date?
        var lastError: String?
    }

    /// An endpoint with the deliveries that wait for it and the dead ones.
    struct EndpointHealth: Sendable {
        var endpoint: Endpoint
        var waiting: Int
        var dead: Int

        var health: (text: String, style: String) {
            if endpoint.disabledAt != nil { return ("disabled", "bad") }
            if let since = endpoint.failingSince { return ("failing since \(ConsoleFormat.time(since))", "warn") }
            return ("healthy", "good")
        }
    }

    var queues: [QueueActivity]
    var checkpoints: [Checkpoint]
    var endpoints: [EndpointHealth]

    static func load(client: PostgresClient, logger: Logger) async throws -> ConsoleOverview {
        let statistics = QueueStatistics(client: client, logger: logger)
        let paused = Set(try await statistics.pausedQueues())
        var queues: [QueueActivity] = []
        for queue in QueueName.all {
            let depth = try await statistics.depth(of: queue, countingFinished: false)
            let done = try await bucketed(client.query(
                """
                SELECT floor(EXTRACT(EPOCH FROM now() - finished_at) / \(ActivityChart.bucketSeconds))::int, count(*)
                FROM \(unescaped: queue.rawValue) WHERE state = 'done' AND finished_at > now() - interval '1 hour' GROUP BY 1
                """, logger: logger))
            let failed = try await bucketed(client.query(
                """
                SELECT floor(EXTRACT(EPOCH FROM now() - finished_at) / \(ActivityChart.bucketSeconds))::int, count(*)
                FROM queue_attempts WHERE queue = \(queue.rawValue) AND finished_at > now() - interval '1 hour' GROUP BY 1
                """, logger: logger))
            queues.append(QueueActivity(
                queue: queue, depth: depth, paused: paused.contains(queue.rawValue), chart: ActivityChart(doneAgo: done, failedAgo: failed)))
        }
        var checkpoints: [Checkpoint] = []
        let rows = try await client.query(
            "SELECT stream, checkpoint, last_success_at, last_error FROM recovery_checkpoints ORDER BY stream", logger: logger)
        for try await (stream, checkpoint, success, error) in rows.decode((String, Date, Date?, String?).self) {
            checkpoints.append(Checkpoint(stream: stream, checkpoint: checkpoint, lastSuccessAt: success, lastError: error))
        }
        return ConsoleOverview(queues: queues, checkpoints: checkpoints, endpoints: try await endpointHealth(client: client, logger: logger))
    }

    /// Every endpoint with its waiting and dead deliveries (counted on the partial indexes).
    static func endpointHealth(client: PostgresClient, logger: Logger) async throws -> [EndpointHealth] {
        let endpoints = try await EndpointStore(client: client, logger: logger).all()
        var waiting: [Int64: Int] = [:]
        var dead: [Int64: Int] = [:]
        for try await (id, count) in try await client.query(
            "SELECT endpoint_id, count(*) FROM deliveries WHERE state IN ('pending', 'running') AND endpoint_id IS NOT NULL GROUP BY 1",
            logger: logger
        ).decode((Int64, Int64).self) { waiting[id] = Int(count) }
        for try await (id, count) in try await client.query(
            "SELECT endpoint_id, count(*) FROM deliveries WHERE state = 'dead' AND endpoint_id IS NOT NULL GROUP BY 1", logger: logger
        ).decode((Int64, Int64).self) { dead[id] = Int(count) }
        return endpoints.map { EndpointHealth(endpoint: $0, waiting: waiting[$0.id] ?? 0, dead: dead[$0.id] ?? 0) }
    }

    private static func bucketed(_ rows: PostgresRowSequence) async throws -> [Int: Int] {
        var counts: [Int: Int] = [:]
        for try await (bucket, count) in rows.decode((Int32, Int64).self) { counts[Int(bucket)] = Int(count) }
        return counts
    }
}
