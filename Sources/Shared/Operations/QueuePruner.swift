// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import Logging
public import PostgresNIO

/// `worker prune`: deletes `done` queue rows and their attempt history once they are old enough,
/// in bounded batches so no statement holds many locks or runs long.
///
/// Never touches `pending`, `running`, `dead` or `discarded` rows, nor the state tables
/// (entitlements, transactions, their history, the applied-events ledger).
public struct QueuePruner: Sendable {
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

    private func pruneBatch(of queue: QueueName, finishedBefore cutoff: Date, batchSize: Int) async throws -> Int {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                DELETE FROM \(unescaped: queue.rawValue) WHERE id IN (
                    SELECT id FROM \(unescaped: queue.rawValue)
                    WHERE state = 'done' AND finished_at < \(cutoff)
                    ORDER BY finished_at LIMIT \(batchSize)
                    FOR UPDATE SKIP LOCKED)
                RETURNING id
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
