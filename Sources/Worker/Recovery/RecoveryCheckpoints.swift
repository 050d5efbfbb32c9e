// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO

/// `recovery_checkpoints`: how far each recovery stream got, and which worker works it now.
///
/// A worker works a stream only while it holds the stream's lease, so two workers never recover
/// the same stream at once; the checkpoint moves only after a whole window was stored, so a worker
/// killed mid-window leaves it where it was and the next run fetches the window again (storing is
/// idempotent: nothing is stored twice).
struct RecoveryCheckpoints: Sendable {
    struct Stream: Sendable, Encodable {
        var stream: String
        var checkpoint: Date
        var lastSuccessAt: Date?
        var lastError: String?

        enum CodingKeys: String, CodingKey {
            case stream, checkpoint, lastSuccessAt = "last_success_at", lastError = "last_error"
        }
    }

    let client: PostgresClient
    let logger: Logger

    /// Takes the stream's lease when nobody else holds it.
    ///
    /// - Parameter initial: the checkpoint of a stream seen for the first time.
    /// - Returns: the checkpoint, or `nil` when another worker holds the lease.
    func lease(_ stream: String, owner: String, for seconds: Double, initial: Date) async throws -> Date? {
        try await client.query(
            "INSERT INTO recovery_checkpoints (stream, checkpoint) VALUES (\(stream), \(initial)) ON CONFLICT (stream) DO NOTHING",
            logger: logger)
        let rows = try await client.query(
            """
            UPDATE recovery_checkpoints
            SET leased_by = \(owner), leased_until = now() + make_interval(secs => \(seconds)), updated_at = now()
            WHERE stream = \(stream) AND (leased_until IS NULL OR leased_until < now() OR leased_by = \(owner))
            RETURNING checkpoint
            """, logger: logger)
        for try await checkpoint in rows.decode(Date.self) { return checkpoint }
        return nil
    }

    /// Moves the checkpoint (never backwards) and gives the lease up.
    func advance(_ stream: String, owner: String, to checkpoint: Date) async throws {
        try await client.query(
            """
            UPDATE recovery_checkpoints
            SET checkpoint = GREATEST(checkpoint, \(checkpoint)), last_success_at = now(), last_error = NULL,
                leased_by = NULL, leased_until = NULL, updated_at = now()
            WHERE stream = \(stream) AND leased_by = \(owner)
            """, logger: logger)
    }

    /// Gives the lease up without running.
    func release(_ stream: String, owner: String) async throws {
        try await client.query(
            "UPDATE recovery_checkpoints SET leased_by = NULL, leased_until = NULL WHERE stream = \(stream) AND leased_by = \(owner)",
            logger: logger)
    }

    /// Records why a run failed and gives the lease up; the checkpoint stays.
    func fail(_ stream: String, owner: String, error: String) async throws {
        try await client.query(
            """
            UPDATE recovery_checkpoints SET last_error = \(String(error.prefix(500))), leased_by = NULL, leased_until = NULL,
                updated_at = now()
            WHERE stream = \(stream) AND leased_by = \(owner)
            """, logger: logger)
    }

    func all() async throws -> [Stream] {
        var streams: [Stream] = []
        for try await (stream, checkpoint, success, error) in try await client.query(
            "SELECT stream, checkpoint, last_success_at, last_error FROM recovery_checkpoints ORDER BY stream", logger: logger
        ).decode((String, Date, Date?, String?).self) {
            streams.append(Stream(stream: stream, checkpoint: checkpoint, lastSuccessAt: success, lastError: error))
        }
        return streams
    }
}
