// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import Shared

/// A database migrated once, from which each test's database is copied
/// (`CREATE DATABASE … TEMPLATE`): one copy per test instead of every migration again, each its
/// own transaction and WAL flush. Hundreds of test databases then stay within the suites' time
/// limits on a loaded two-core machine.
///
/// Its name carries a hash of the migrations, so a changed `sql/` gets a template of its own;
/// it is built under a temporary name and renamed when complete, so a test process never copies
/// a half-migrated one (another process building the same one at once loses the rename and drops
/// its copy).
actor MigratedTemplate {
    private var built: String?

    /// The template's name on `server`, migrated with `migrations` and `functions`; built on first use.
    func name(on server: DatabaseURL, migrations: [Migration], functions: [Migration], logger: Logger) async throws -> String {
        if let built { return built }
        let name = "sluice_template_" + Self.fingerprint(of: migrations + functions)
        if try await !Self.exists(name, on: server, logger: logger) {
            let building = "\(name)_\(UInt32.random(in: 0...UInt32.max))"
            try await Self.admin(server, logger: logger) { try await $0.query("CREATE DATABASE \(unescaped: building)", logger: logger) }
            var url = server
            url.database = building
            try await DatabaseSession.with(url, maximumConnections: 1, logger: logger) { client in
                try await Migrator(client: client, logger: logger).migrate(migrations, functions: functions)
            }
            do {
                try await Self.admin(server, logger: logger) {
                    try await $0.query("ALTER DATABASE \(unescaped: building) RENAME TO \(unescaped: name)", logger: logger)
                }
            } catch {
                guard try await Self.exists(name, on: server, logger: logger) else { throw error }
                _ = try? await Self.admin(server, logger: logger) {
                    try await $0.query("DROP DATABASE IF EXISTS \(unescaped: building) WITH (FORCE)", logger: logger)
                }
            }
        }
        built = name
        return name
    }

    /// 16 hex digits of FNV-1a over every migration's version and text: the same `sql/` gives the
    /// same name in every process (Swift's `Hasher` is seeded per process).
    static func fingerprint(of migrations: [Migration]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for migration in migrations {
            for byte in Array(migration.version.utf8) + [0] + Array(migration.sql.utf8) + [0] {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
        }
        return String(hash, radix: 16).leftPadded(to: 16)
    }

    private static func exists(_ name: String, on server: DatabaseURL, logger: Logger) async throws -> Bool {
        try await admin(server, logger: logger) { admin in
            for try await _ in try await admin.query("SELECT 1 FROM pg_database WHERE datname = \(name)", logger: logger) { return true }
            return false
        }
    }

    @discardableResult
    private static func admin<Result: Sendable>(
        _ server: DatabaseURL, logger: Logger, _ body: @Sendable @escaping (PostgresClient) async throws -> Result
    ) async throws -> Result {
        try await DatabaseSession.with(server, maximumConnections: 1, logger: logger, body)
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
