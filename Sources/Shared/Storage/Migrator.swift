// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import Logging
public import PostgresNIO

/// Applies pending migrations, each once, however many processes run it at the same time.
///
/// A migrator first takes a session-level advisory lock, so concurrent migrators take turns and
/// find the work done. Consecutive pending migrations run in one transaction, so
/// a failing one rolls them all back and leaves the database as it was before them. A migration
/// marked ``Migration/noTransactionMarker`` (a concurrent index build) runs on its own, outside
/// any transaction, and is recorded once all its statements succeeded.
///
/// Then the function files (`sql/functions/`, ``Migration/loadFunctions(from:)``) are applied, all
/// in one transaction, every time — that of the last pending transactional migrations when there
/// are some, so that a schema and the functions and triggers made for it are committed together: a
/// function's current body is in one file, and a release that changes it changes the database's
/// on its next migrate. A file must be safe to run again
/// (`CREATE OR REPLACE`); a change of a function's arguments or result needs a migration that
/// drops the old one first.
public struct Migrator: Sendable {
    /// The advisory lock key that serialises migrators ("sluice" in ASCII).
    static let lockKey: Int64 = 0x736C_7569_6365

    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Applies what is pending, then `functions` (``migrate(directory:)`` loads both from one
    /// folder; a caller that passes `[]` gets tables without the functions the worker calls).
    ///
    /// - Returns: the versions this call applied, empty when everything was already there (the
    ///   functions, applied every time, are not listed).
    /// - Throws: the database error of the migration or function file that failed, wrapped in
    ///   ``MigrationError``.
    @discardableResult
    public func migrate(_ migrations: [Migration], functions: [Migration]) async throws -> [String] {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await Self.lock(connection, logger: logger)
            do {
                let applied = try await Self.apply(migrations, functions: functions, on: connection, logger: logger)
                try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                return applied
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                throw error
            }
        }
    }

    /// Applies what is pending of the migrations in `directory`, then its function files: what
    /// `worker migrate` does.
    @discardableResult
    public func migrate(directory: URL) async throws -> [String] {
        try await migrate(try Migration.load(from: directory), functions: try Migration.loadFunctions(from: directory))
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

    /// The pending migrations, and the function files in the transaction of the last pending
    /// transactional run: a migration's schema and the functions and triggers that go with it are
    /// committed together, so no other transaction writes between them (a ledger row written after
    /// `0044` made its queue, before its trigger existed, would never be announced). A concurrent
    /// index build after it runs after them; with no transactional run pending, the function files
    /// get a transaction of their own.
    private static func apply(_ migrations: [Migration], functions: [Migration], on connection: PostgresConnection, logger: Logger) async throws -> [String] {
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
        let pending = groups(migrations.filter { !applied.contains($0.version) })
        let carriesFunctions = pending.lastIndex { $0.contains(where: \.runsInTransaction) }
        for (index, group) in pending.enumerated() {
            if group.count == 1, let migration = group.first, !migration.runsInTransaction {
                try await run(migration, on: connection, logger: logger)
            } else {
                let withFunctions = index == carriesFunctions
                try await inTransaction(on: connection, logger: logger) { connection in
                    for migration in group { try await run(migration, on: connection, logger: logger) }
                    if withFunctions { try await run(functions: functions, on: connection, logger: logger) }
                }
            }
            newlyApplied += group.map(\.version)
        }
        if carriesFunctions == nil { try await apply(functions: functions, on: connection, logger: logger) }
        return newlyApplied
    }

    /// The function files, in one transaction: all of them or none.
    private static func apply(functions: [Migration], on connection: PostgresConnection, logger: Logger) async throws {
        guard !functions.isEmpty else { return }
        try await inTransaction(on: connection, logger: logger) { connection in
            try await run(functions: functions, on: connection, logger: logger)
        }
    }

    /// How many times a migration transaction is tried when PostgreSQL breaks it off as one side
    /// of a deadlock.
    static let deadlockAttempts = 5

    /// Runs `body` in a transaction, and again from its start when PostgreSQL broke it off as one
    /// side of a deadlock: a migration or function file locks tables (`LOCK TABLE`, `CREATE OR
    /// REPLACE TRIGGER`) in its own order, and a running worker's batch holds locks on the same
    /// tables in another, so a `worker migrate` next to running workers may deadlock with one.
    /// PostgreSQL rolls back the side that finds the cycle, usually the migrator, which waited
    /// first; the worker's batch then commits, and the rolled-back transaction, all or nothing,
    /// is safe to run again. Any other error, or a deadlock on the last attempt, is thrown: the
    /// migration's own error once the transaction rolled back.
    private static func inTransaction(
        on connection: PostgresConnection, logger: Logger, _ body: (PostgresConnection) async throws -> Void
    ) async throws {
        var attempt = 1
        while true {
            do {
                try await connection.withTransaction(logger: logger) { try await body($0) }
                return
            } catch let error as PostgresTransactionError {
                let cause = error.closureError ?? error
                guard let migration = cause as? MigrationError, migration.isDeadlock, attempt < deadlockAttempts else { throw cause }
                logger.warning(
                    "migration deadlocked with another transaction (a running worker's batch); rolled back, trying again",
                    metadata: ["version": "\(migration.version)", "attempt": "\(attempt)"])
                try await Task.sleep(for: .milliseconds(200 * attempt))
                attempt += 1
            }
        }
    }

    /// The function files, on a connection inside a transaction.
    private static func run(functions: [Migration], on connection: PostgresConnection, logger: Logger) async throws {
        for function in functions { try await run(statementsOf: function, on: connection, logger: logger) }
        if !functions.isEmpty { logger.debug("applied the function files", metadata: ["count": "\(functions.count)"]) }
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
        try await run(statementsOf: migration, on: connection, logger: logger)
        try await connection.query("INSERT INTO schema_migrations (version) VALUES (\(migration.version))", logger: logger)
        logger.info("applied migration", metadata: ["version": "\(migration.version)"])
    }

    private static func run(statementsOf migration: Migration, on connection: PostgresConnection, logger: Logger) async throws {
        do {
            // postgres-nio runs one statement per query; a migration file holds many.
            for statement in SQLStatementSplitter.split(migration.sql) {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        } catch {
            throw MigrationError(
                version: migration.version, underlying: String(reflecting: error), sqlState: (error as? PSQLError)?.serverInfo?[.sqlState])
        }
    }
}

/// A migration that the database refused.
public struct MigrationError: Error, CustomStringConvertible {
    public var version: String
    public var underlying: String
    /// The database's SQLSTATE, when the database refused it.
    public var sqlState: String?
    public var description: String { "migration \(version) failed: \(underlying)" }

    public init(version: String, underlying: String, sqlState: String? = nil) {
        self.version = version
        self.underlying = underlying
        self.sqlState = sqlState
    }

    /// PostgreSQL broke the transaction off as one side of a deadlock (`40P01`).
    public var isDeadlock: Bool { sqlState == "40P01" }
}
