// SPDX-License-Identifier: Apache-2.0
public import Logging
public import PostgresNIO

/// Applies pending migrations, each once, however many processes run it at the same time.
///
/// A migrator first takes a session-level advisory lock, so concurrent migrators take turns and
/// find the work done. Consecutive pending migrations run in one transaction, so
/// a failing one rolls them all back and leaves the database as it was before them. A migration
/// marked ``Migration/noTransactionMarker`` (a concurrent index build) runs on its own, outside
/// any transaction, and is recorded once all its statements succeeded.
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
            try await Self.lock(connection, logger: logger)
            do {
                let applied = try await Self.apply(migrations, on: connection, logger: logger)
                try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                return applied
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                throw error
            }
        }
    }

    /// Takes the session-level lock, asking again every 100 ms rather than waiting in
    /// `pg_advisory_lock`: a waiting statement holds a snapshot, and `CREATE INDEX CONCURRENTLY`
    /// in the migrator holding the lock waits for every older snapshot, a deadlock.
    private static func lock(_ connection: PostgresConnection, logger: Logger) async throws {
        while true {
            for try await locked in try await connection.query("SELECT pg_try_advisory_lock(\(lockKey))", logger: logger).decode(Bool.self) {
                if locked { return }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    private static func apply(_ migrations: [Migration], on connection: PostgresConnection, logger: Logger) async throws -> [String] {
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version text PRIMARY KEY,
                applied_at timestamptz NOT NULL DEFAULT now())
            """, logger: logger)
        var applied = Set<String>()
        for try await version in try await connection.query("SELECT version FROM schema_migrations", logger: logger).decode(String.self) {
            applied.insert(version)
        }
        var newlyApplied: [String] = []
        for group in groups(migrations.filter { !applied.contains($0.version) }) {
            if group.count == 1, let migration = group.first, !migration.runsInTransaction {
                try await run(migration, on: connection, logger: logger)
            } else {
                do {
                    try await connection.withTransaction(logger: logger) { connection in
                        for migration in group { try await run(migration, on: connection, logger: logger) }
                    }
                } catch let error as PostgresTransactionError {
                    // The migration's own error, once the transaction rolled back.
                    throw error.closureError ?? error
                }
            }
            newlyApplied += group.map(\.version)
        }
        return newlyApplied
    }

    /// Runs of consecutive transactional migrations, and each non-transactional one alone.
    public static func groups(_ pending: [Migration]) -> [[Migration]] {
        var groups: [[Migration]] = []
        for migration in pending {
            if migration.runsInTransaction, let last = groups.last?.last, last.runsInTransaction {
                groups[groups.count - 1].append(migration)
            } else {
                groups.append([migration])
            }
        }
        return groups
    }

    private static func run(_ migration: Migration, on connection: PostgresConnection, logger: Logger) async throws {
        do {
            // postgres-nio runs one statement per query; a migration file holds many.
            for statement in SQLStatementSplitter.split(migration.sql) {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        } catch {
            throw MigrationError(version: migration.version, underlying: String(reflecting: error))
        }
        try await connection.query("INSERT INTO schema_migrations (version) VALUES (\(migration.version))", logger: logger)
        logger.info("applied migration", metadata: ["version": "\(migration.version)"])
    }
}

/// A migration that the database refused.
public struct MigrationError: Error, CustomStringConvertible {
    public var version: String
    public var underlying: String
    public var description: String { "migration \(version) failed: \(underlying)" }
}
