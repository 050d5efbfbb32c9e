// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import Shared

/// `worker migrate`: applies the SQL migrations of `sql/`.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply pending SQL migrations; safe to run concurrently and repeatedly.",
        discussion: """
            Runs every pending sql/NNNN_name.sql in one transaction under an advisory lock and records \
            it in schema_migrations, then applies every sql/functions/<name>.sql (each function's \
            current body, CREATE OR REPLACE) in one transaction, every time. A failing migration or \
            function leaves the database as it was and exits 1.

            Environment:
              DATABASE_URL        postgres://user:pass@host:port/db (required)
              MIGRATIONS_DIR      the folder of migrations (default: ./sql, then next to the binary)
            """)

    @Option(help: "The folder of NNNN_name.sql migrations (overrides MIGRATIONS_DIR).")
    var directory: String?

    func run() async throws {
        let environment = try EnvironmentValues.process()
        guard let folder = Migration.locateDirectory(
            explicit: directory ?? environment.string("MIGRATIONS_DIR"),
            executablePath: CommandLine.arguments[0])
        else {
            throw CommandFailure("no sql/ folder found; pass --directory or set MIGRATIONS_DIR")
        }
        let migrations = try Migration.load(from: folder)
        let functions = try Migration.loadFunctions(from: folder)
        // Only DATABASE_URL and the log settings matter here, not the pool's (a bad FORWARD_TARGETS
        // must not stop a migration).
        let applied = try await OperatorSession.with { client, logger in
            try await Migrator(client: client, logger: logger).migrate(migrations, functions: functions)
        }
        let functionsNote = "\(functions.count) functions applied"
        OperatorSession.show(
            applied.isEmpty
                ? "up to date (\(migrations.count) migrations; \(functionsNote))"
                : "applied \(applied.joined(separator: ", ")); \(functionsNote)")
    }
}
