// SPDX-License-Identifier: Apache-2.0
public import Logging
public import PostgresNIO

/// Applies pending migrations, each once, however many processes run it at the same time.
///
/// All pending migrations run in one transaction that first takes a transaction-scoped advisory
/// lock, so concurrent migrators queue behind each other and find the work done; a failing
/// migration rolls everything back and leaves the database as it was.
public struct Migrator: Sendable {
    /// The advisory lock key that serialises migrators ("sluice" in ASCII).
    static let lockKey: Int64 = 0x736C_7569_6365

    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Applies what is pending.
    ///
    /// - Returns: the versions this call applied, empty when everything was already there.
    /// - Throws: the database error of the migration that failed, wrapped in ``MigrationError``.
    @discardableResult
    public func migrate(_ migrations: [Migration]) async throws -> [String] {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await connection.withTransaction(logger: logger) { connection in
                // Read the row: an error waiting for the lock arrives with it.
                for try await _ in try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger) {}
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version text PRIMARY KEY,
                        applied_at timestamptz NOT NULL DEFAULT now())
                    """, logger: logger)
                var applied = Set<String>()
                for try await version in try await connection.query(
                    "SELECT version FROM schema_migrations", logger: logger
                ).decode(String.self) {
                    applied.insert(version)
                }
                var newlyApplied: [String] = []
                for migration in migrations where !applied.contains(migration.version) {
                    do {
                        // postgres-nio runs one statement per query; a migration file holds many.
                        for statement in SQLStatementSplitter.split(migration.sql) {
                            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                        }
                    } catch {
                        throw MigrationError(version: migration.version, underlying: String(reflecting: error))
                    }
                    try await connection.query(
                        "INSERT INTO schema_migrations (version) VALUES (\(migration.version))", logger: logger)
                    logger.info("applied migration", metadata: ["version": "\(migration.version)"])
                    newlyApplied.append(migration.version)
                }
                return newlyApplied
            }
        }
    }
}

/// A migration that the database refused.
public struct MigrationError: Error, CustomStringConvertible {
    public var version: String
    public var underlying: String
    public var description: String { "migration \(version) failed: \(underlying)" }
}
