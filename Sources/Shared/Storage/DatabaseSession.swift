// SPDX-License-Identifier: Apache-2.0
public import Logging
public import PostgresNIO

/// Runs a short-lived PostgreSQL client around one piece of work, for command-line commands.
public enum DatabaseSession {
    /// Starts a client, checks the database answers, runs `body`, then shuts the client down.
    ///
    /// - Throws: what `body` throws, or a ``CommandFailure`` when the database does not answer
    ///   within `connectTimeout` (`DATABASE_TIMEOUT_SECONDS` unless given), saying why.
    @discardableResult
    public static func with<Result: Sendable>(
        _ url: DatabaseURL, maximumConnections: Int = 2, connectTimeout: Duration? = nil, logger: Logger,
        _ body: @Sendable @escaping (PostgresClient) async throws -> Result
    ) async throws -> Result {
        // A command says in one line why it failed; the pool's retries of a refused connection are not news.
        let client = try url.makeClient(maximumConnections: maximumConnections, logger: logger)
        return try await OverrunHost.with {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                let limit = connectTimeout ?? url.timeout
                do {
                    // Cancelled at the limit, not abandoned: a pool waiting for a connection gives the
                    // request up at once, and the command ends without waiting for it.
                    _ = try await withCancellingTimeout(limit) { try await client.query("SELECT 1", logger: logger) }
                } catch {
                    throw CommandFailure(
                        "the database at \(url.host):\(url.port)/\(url.database) cannot be reached: \(DatabaseProblem.sentence(error, timeout: limit))")
                }
                return try await body(client)
            }
        }
    }
}

