// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// One numbered SQL file from `sql/`, such as `0001_queue.sql`; or one function's file from
/// `sql/functions/` (``loadFunctions(from:)``), which holds the function's current body.
public struct Migration: Sendable, Equatable {
    /// The file name without `.sql`; it is what `schema_migrations` records. A function's file is
    /// `functions/<name>`, and is recorded nowhere: it is applied every time.
    public var version: String
    public var sql: String

    public init(version: String, sql: String) {
        self.version = version
        self.sql = sql
    }

    /// The first line that makes a migration run outside a transaction, one statement at a time:
    /// for `CREATE INDEX CONCURRENTLY` on a large table, which PostgreSQL refuses in a transaction
    /// and which lets writes go on while the index is built. Such a migration must be safe to run
    /// again from its start (`IF NOT EXISTS`, `DROP … IF EXISTS`), since a failure leaves what its
    /// earlier statements did.
    public static let noTransactionMarker = "-- sluice:no-transaction"

    /// Whether the migration runs in a transaction (all of it or none); see ``noTransactionMarker``.
    public var runsInTransaction: Bool {
        !sql.hasPrefix(Self.noTransactionMarker)
    }

    /// Reads every `NNNN_name.sql` file of a folder, in version order.
    ///
    /// - Throws: ``ConfigurationError`` when the folder cannot be read or holds no migration.
    public static func load(from directory: URL) throws -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw ConfigurationError(variable: "migrations directory", reason: "\(directory.path) cannot be read")
        }
        let migrations = try names
            .filter { $0.hasSuffix(".sql") && $0.first?.isNumber == true }
            .sorted()
            .map { name in
                Migration(
                    version: String(name.dropLast(4)),
                    sql: try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8))
            }
        guard !migrations.isEmpty else {
            throw ConfigurationError(variable: "migrations directory", reason: "\(directory.path) holds no NNNN_name.sql file")
        }
        return migrations
    }

    /// The folder of function files inside a migrations folder.
    public static let functionsFolder = "functions"

    /// The function file every other one calls (`CALL sluice_allow_execute(…)`, who may call the
    /// function it defines): applied first.
    public static let appliedFirst = "sluice_allow_execute"

    /// Reads every `<name>.sql` of the `functions/` folder inside `directory`: ``appliedFirst``,
    /// then the others in name order; each function's current body with its grants (`CREATE OR
    /// REPLACE`), applied by the ``Migrator`` after the pending migrations, every time. A folder
    /// without one reads as none.
    ///
    /// - Throws: ``ConfigurationError`` when a function file cannot be read.
    public static func loadFunctions(from directory: URL) throws -> [Migration] {
        let folder = directory.appendingPathComponent(functionsFolder)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        let first = appliedFirst + ".sql"
        return try names.filter { $0.hasSuffix(".sql") }.sorted { ($0 == first) != ($1 == first) ? $0 == first : $0 < $1 }.map { name in
            do {
                return Migration(
                    version: "\(functionsFolder)/\(name.dropLast(4))",
                    sql: try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8))
            } catch {
                throw ConfigurationError(variable: "migrations directory", reason: "\(folder.path)/\(name) cannot be read")
            }
        }
    }

    /// Finds the `sql/` folder: an explicit path, else `./sql`, else next to the installed binary
    /// (`<prefix>/share/sluice/sql` for a `<prefix>/bin/worker`), else the source checkout the binary was built in.
    public static func locateDirectory(explicit: String?, executablePath: String) -> URL? {
        if let explicit { return URL(fileURLWithPath: explicit) }
        let executable = URL(fileURLWithPath: executablePath).resolvingSymlinksInPath().deletingLastPathComponent()
        let candidates = [
            URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("sql"),
            executable.appendingPathComponent("../share/sluice/sql").standardized,
            // .build/<triple>/<config>/worker → the package root
            executable.appendingPathComponent("../../../sql").standardized,
        ]
        return candidates.first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("0001_queue.sql").path) }
    }
}
