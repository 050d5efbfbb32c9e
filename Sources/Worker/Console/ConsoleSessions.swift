// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Logging
import PostgresNIO
import Shared

/// The console's sessions as the database holds them (`console_sessions`): the cookie's signature
/// (``ConsoleSessionToken``) says which operator key began a session, and this says whether it is
/// still live — for every console replica. Signing out ends it; ``idleTimeout`` without a request
/// ends it; it never outlives the cookie's expiry. Only the SHA-256 of a session's nonce is kept.
/// Each call is limited to `DATABASE_TIMEOUT_SECONDS`: with the database gone, signing in and
/// every page say so in time (``ConsoleDatabaseErrorPage``).
struct ConsoleSessions: Sendable {
    /// How long a session may go without a request.
    static let idleTimeout: TimeInterval = 30 * 60

    let client: PostgresClient
    /// `DATABASE_TIMEOUT_SECONDS`.
    let limit: Duration
    let logger: Logger

    /// Records a session just begun (and forgets those a day past their expiry).
    func begin(_ token: ConsoleSessionToken) async throws {
        let (client, logger, digest) = (client, logger, Self.digest(token))
        try await withCancellingTimeout(limit) {
            try await client.withConnection { connection in
                try await connection.query(
                    """
                    INSERT INTO console_sessions (nonce_digest, operator_key, expires_at)
                    VALUES (\(digest), \(token.keyIndex + 1), to_timestamp(\(Double(token.expiry))))
                    """, logger: logger)
                try await connection.query("DELETE FROM console_sessions WHERE expires_at < now() - interval '1 day'", logger: logger)
            }
        }
    }

    /// Whether the session is live (begun, not ended, not idle too long, not expired); a live one
    /// is marked seen now.
    func touch(_ token: ConsoleSessionToken) async throws -> Bool {
        let (client, logger, digest) = (client, logger, Self.digest(token))
        return try await withCancellingTimeout(limit) {
            let rows = try await client.query(
                """
                UPDATE console_sessions SET last_seen_at = now()
                WHERE nonce_digest = \(digest) AND ended_at IS NULL AND expires_at > now()
                    AND last_seen_at > now() - make_interval(secs => \(Self.idleTimeout))
                RETURNING 1
                """, logger: logger)
            var live = false
            for try await _ in rows { live = true }
            return live
        }
    }

    /// Ends the session for every replica: its cookie is refused from now on, wherever it was copied.
    func end(_ token: ConsoleSessionToken) async throws {
        let (client, logger, digest) = (client, logger, Self.digest(token))
        _ = try await withCancellingTimeout(limit) {
            try await client.query(
                "UPDATE console_sessions SET ended_at = now() WHERE nonce_digest = \(digest) AND ended_at IS NULL", logger: logger)
        }
    }

    private static func digest(_ token: ConsoleSessionToken) -> ByteBuffer {
        ByteBuffer(bytes: SHA256.hash(data: Data(token.nonce.utf8)))
    }
}
