// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import Logging
public import PostgresNIO

/// `worker prune`: deletes `done` queue rows and their attempt history once they are old enough,
/// in bounded batches so no statement holds many locks or runs long.
///
/// Never touches `pending`, `running`, `dead` or `discarded` rows, nor the state tables
/// (entitlements, transactions, their history, the applied-events ledger). A pruned event's
/// `(source, external_id)` key moves to `event_keys` in the same statement, so the event is still a
/// duplicate when it is delivered or recovered again; keys go only with ``pruneKeys(receivedBefore:batchSize:)``.
public struct QueuePruner: Sendable {
    /// How long dedup keys are kept by default, and the least without `--force`: Apple's
    /// notification history, from which recovery may fetch an event again, reaches 180 days back.
    public static let defaultKeyRetention: TimeInterval = 400 * 86_400
    public static let minimumKeyRetention: TimeInterval = 180 * 86_400

    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Deletes `done` rows of `queues` that finished before `cutoff`.
    ///
    /// - Returns: how many rows were deleted from each queue.
    public func prune(
        finishedBefore cutoff: Date, queues: [QueueName] = QueueName.all, batchSize: Int = 1_000
    ) async throws -> [QueueName: Int] {
        var deleted: [QueueName: Int] = [:]
        for queue in queues {
            var total = 0
            while true {
                let count = try await pruneBatch(of: queue, finishedBefore: cutoff, batchSize: batchSize)
                total += count
                if count < batchSize { break }
            }
            deleted[queue] = total
        }
        return deleted
    }

    /// Deletes the dedup keys of pruned events received before `cutoff`.
    ///
    /// - Returns: how many keys were deleted.
    public func pruneKeys(receivedBefore cutoff: Date, batchSize: Int = 1_000) async throws -> Int {
        var total = 0
        while true {
            var count = 0
            for try await _ in try await client.query(
                """
                DELETE FROM event_keys WHERE (source, external_id) IN (
                    SELECT source, external_id FROM event_keys WHERE received_at < \(cutoff) ORDER BY received_at LIMIT \(batchSize))
                RETURNING source
                """, logger: logger
            ) {
                count += 1
            }
            total += count
            if count < batchSize { return total }
        }
    }

    private func pruneBatch(of queue: QueueName, finishedBefore cutoff: Date, batchSize: Int) async throws -> Int {
        let logger = self.logger
        // An event's key outlives it (`event_keys`); a delivery has no key of its own.
        let keepKeys = queue == .events
            ? ", kept AS (INSERT INTO event_keys (source, external_id, received_at) SELECT source, external_id, received_at FROM gone ON CONFLICT DO NOTHING)"
            : ""
        return try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                WITH gone AS (
                    DELETE FROM \(unescaped: queue.rawValue) WHERE id IN (
                        SELECT id FROM \(unescaped: queue.rawValue)
                        WHERE state = 'done' AND finished_at < \(cutoff)
                        ORDER BY finished_at LIMIT \(batchSize)
                        FOR UPDATE SKIP LOCKED)
                    RETURNING id, source, external_id, received_at)\(unescaped: keepKeys)
                SELECT id FROM gone
                """, logger: logger)
            var ids: [Int64] = []
            for try await id in rows.decode(Int64.self) { ids.append(id) }
            guard !ids.isEmpty else { return 0 }
            try await connection.query(
                "DELETE FROM queue_attempts WHERE queue = \(queue.rawValue) AND job_id = ANY(\(ids))", logger: logger)
            return ids.count
        }
    }
}
