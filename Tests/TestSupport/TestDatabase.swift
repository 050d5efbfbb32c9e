// SPDX-License-Identifier: Apache-2.0
public import Foundation
import Logging
public import PostgresNIO
public import Shared

/// A fresh, migrated PostgreSQL database for one test, on the server `DATABASE_URL` names.
///
/// Each test gets its own database, so tests run in parallel without seeing each other's rows.
/// `scripts/test` starts a throwaway server and sets `DATABASE_URL`; without it the test fails.
public struct TestDatabase: Sendable {
    public let url: DatabaseURL
    public let client: PostgresClient

    public static let logger: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .critical
        return logger
    }()

    /// The server's URL, or a failure that says how to get one.
    public static func serverURL() throws -> DatabaseURL {
        guard let text = ProcessInfo.processInfo.environment["DATABASE_URL"] else {
            throw CommandFailure("DATABASE_URL is not set: run the tests with scripts/test, which starts a throwaway PostgreSQL")
        }
        var url = try DatabaseURL(text)
        // The tests' own connections wait longer than DATABASE_TIMEOUT_SECONDS's default: with the
        // suites in parallel on two cores, creating a database from the template was seen to take
        // more than 5 s. Tests of the timeout itself set their own.
        url.timeout = .seconds(30)
        return url
    }

    /// The repository's `sql/` folder.
    public static let migrationsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("sql")

    /// Two databases are created at a time (see ``CreationLimiter``).
    private static let creations = CreationLimiter(limit: 2)

    /// Creates a database, migrates it unless `migrate` is false, runs `body` with a running client, then drops it.
    public static func with<Result: Sendable>(
        migrate: Bool = true, maximumConnections: Int = 24,
        _ body: @Sendable @escaping (TestDatabase) async throws -> Result
    ) async throws -> Result {
        let server = try serverURL()
        var url = server
        url.database = "sluice_test_\(UInt64.random(in: 0...UInt64.max))"
        let name = url.database
        let client = PostgresClient(
            configuration: try url.clientConfiguration(maximumConnections: maximumConnections), backgroundLogger: logger)
        let result: Result
        do {
            // A host for work whose caller gave up on it (withTimeout), as the processes have.
            result = try await OverrunHost.with {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await client.run() }
                    defer { group.cancelAll() }
                    try await creations.run {
                        let template = migrate
                            ? try await template.name(
                                on: server, migrations: try Migration.load(from: migrationsDirectory),
                                functions: try Migration.loadFunctions(from: migrationsDirectory), logger: logger)
                            : nil
                        try await create(name, from: template, on: server)
                    }
                    return try await body(TestDatabase(url: url, client: client))
                }
            }
        } catch {
            try? await drop(name, on: server)
            throw error
        }
        try? await drop(name, on: server)
        return result
    }

    /// The migrations, applied once (``MigratedTemplate``) and copied into each database.
    private static let template = MigratedTemplate()

    /// Creates `name`, a copy of `template` when one is given. A copy is refused while anyone is
    /// connected to the template (the migration's own connections close just after it ends), so
    /// it is tried again a few times.
    private static func create(_ name: String, from template: String?, on server: DatabaseURL) async throws {
        for attempt in 1... {
            do {
                try await DatabaseSession.with(server, maximumConnections: 1, logger: logger) { admin in
                    if let template {
                        try await admin.query("CREATE DATABASE \(unescaped: name) TEMPLATE \(unescaped: template)", logger: logger)
                    } else {
                        try await admin.query("CREATE DATABASE \(unescaped: name)", logger: logger)
                    }
                }
                return
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55006" && attempt < 50 {
                try await Task.sleep(for: .milliseconds(100))  // object_in_use: the template still has a connection
            }
        }
    }

    private static func drop(_ name: String, on server: DatabaseURL) async throws {
        try await DatabaseSession.with(server, maximumConnections: 1, logger: logger) { admin in
            try await admin.query("DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)", logger: logger)
        }
    }

    /// Applies the migrations older than `version`, without the function files: a database of
    /// the release before that migration, for a test of the migration itself.
    ///
    /// - Returns: the migrations applied, and all of them (the caller applies the rest).
    @discardableResult
    public func migrate(before version: String) async throws -> (applied: [Migration], all: [Migration]) {
        let all = try Migration.load(from: Self.migrationsDirectory)
        let before = all.filter { $0.version < version }
        try await Migrator(client: client, logger: Self.logger).migrate(before, functions: [])
        return (before, all)
    }

    /// A single integer from a query such as `SELECT count(*) …`.
    public func scalar(_ query: PostgresQuery) async throws -> Int64 {
        for try await value in try await client.query(query, logger: Self.logger).decode(Int64.self) { return value }
        throw CommandFailure("the query returned no row")
    }

    /// The first column of every row, as text.
    public func strings(_ query: PostgresQuery) async throws -> [String] {
        var values: [String] = []
        for try await value in try await client.query(query, logger: Self.logger).decode(String.self) { values.append(value) }
        return values
    }
}
