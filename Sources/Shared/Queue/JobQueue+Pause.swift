// SPDX-License-Identifier: Apache-2.0
import PostgresNIO

extension JobQueue {
    /// Stops dequeuing from this queue in every worker process; running jobs finish.
    public func pause() async throws {
        try await client.query(
            "INSERT INTO queue_pauses (queue) VALUES (\(name.rawValue)) ON CONFLICT DO NOTHING", logger: logger)
    }

    /// Lets every worker process dequeue from this queue again.
    public func resume() async throws {
        try await client.query("DELETE FROM queue_pauses WHERE queue = \(name.rawValue)", logger: logger)
        try await client.query("SELECT pg_notify(\(name.notificationChannel), '')", logger: logger)
    }

    public func isPaused() async throws -> Bool {
        let rows = try await client.query(
            "SELECT count(*) FROM queue_pauses WHERE queue = \(name.rawValue)", logger: logger)
        for try await count in rows.decode(Int64.self) { return count > 0 }
        return false
    }
}
