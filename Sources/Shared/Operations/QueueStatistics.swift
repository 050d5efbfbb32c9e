// SPDX-License-Identifier: Apache-2.0
public import Logging
public import PostgresNIO

/// Depth by state and age of every queue: `worker stats` and the worker's gauges.
public struct QueueStatistics: Sendable {
    /// One queue's numbers.
    public struct Depth: Sendable, Codable, Equatable {
        public var pending = 0
        public var running = 0
        public var done = 0
        public var dead = 0
        public var discarded = 0
        /// How long the oldest runnable job has waited; `0` when none waits.
        public var oldestRunnableAgeSeconds: Double = 0

        public init() {}

        enum CodingKeys: String, CodingKey {
            case pending, running, done, dead, discarded, oldestRunnableAgeSeconds = "oldest_runnable_age_seconds"
        }

        mutating func set(_ state: String, _ count: Int) {
            switch state {
            case "pending": pending = count
            case "running": running = count
            case "done": done = count
            case "dead": dead = count
            case "discarded": discarded = count
            default: break
            }
        }
    }

    /// Unfinished and dead jobs of one source and type in one queue.
    public struct Breakdown: Sendable, Codable, Equatable {
        public var queue: String
        public var source: String
        public var type: String
        public var pending: Int
        public var running: Int
        public var dead: Int
    }

    /// What `worker stats --json` prints.
    public struct Report: Sendable, Codable {
        public var queues: [String: Depth]
        public var paused: [String]
        public var byType: [Breakdown]

        enum CodingKeys: String, CodingKey { case queues, paused, byType = "by_type" }
    }

    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Every queue's depth, the paused queues and the per source/type breakdown of unfinished jobs.
    ///
    /// Counting `done` rows reads the whole table; `worker prune` keeps that table small.
    public func report() async throws -> Report {
        var queues: [String: Depth] = [:]
        var breakdown: [Breakdown] = []
        for queue in QueueName.all {
            queues[queue.rawValue] = try await depth(of: queue, countingFinished: true)
            let rows = try await client.query(
                """
                SELECT source, type,
                       count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'running'),
                       count(*) FILTER (WHERE state = 'dead')
                FROM \(unescaped: queue.rawValue) WHERE state IN ('pending', 'running', 'dead')
                GROUP BY source, type ORDER BY source, type
                """, logger: logger)
            for try await (source, type, pending, running, dead) in rows.decode((String, String, Int64, Int64, Int64).self) {
                breakdown.append(Breakdown(
                    queue: queue.rawValue, source: source, type: type, pending: Int(pending), running: Int(running), dead: Int(dead)))
            }
        }
        return Report(queues: queues, paused: try await pausedQueues(), byType: breakdown)
    }

    /// One queue's depth. Without `countingFinished`, `done` and `discarded` stay 0 and each state
    /// is counted on its own partial index (an index-only scan), cheap enough for every scrape;
    /// with it, the whole table is read.
    public func depth(of queue: QueueName, countingFinished: Bool) async throws -> Depth {
        var depth = Depth()
        let table = queue.rawValue
        if countingFinished {
            let rows = try await client.query(
                "SELECT state, count(*) FROM \(unescaped: table) GROUP BY state", logger: logger)
            for try await (state, count) in rows.decode((String, Int64).self) { depth.set(state, Int(count)) }
        } else {
            // One literal `state = …` per count, so that each matches its partial index's predicate.
            let rows = try await client.query(
                """
                SELECT (SELECT count(*) FROM \(unescaped: table) WHERE state = 'pending'),
                       (SELECT count(*) FROM \(unescaped: table) WHERE state = 'running'),
                       (SELECT count(*) FROM \(unescaped: table) WHERE state = 'dead')
                """, logger: logger)
            for try await (pending, running, dead) in rows.decode((Int64, Int64, Int64).self) {
                (depth.pending, depth.running, depth.dead) = (Int(pending), Int(running), Int(dead))
            }
        }
        let age = try await client.query(
            """
            SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(run_at))::float8, 0) FROM \(unescaped: queue.rawValue)
            WHERE state = 'pending' AND run_at <= now()
            """, logger: logger)
        for try await seconds in age.decode(Double.self) { depth.oldestRunnableAgeSeconds = max(seconds, 0) }
        return depth
    }

    public func pausedQueues() async throws -> [String] {
        var paused: [String] = []
        for try await queue in try await client.query("SELECT queue FROM queue_pauses ORDER BY queue", logger: logger).decode(String.self) {
            paused.append(queue)
        }
        return paused
    }
}
