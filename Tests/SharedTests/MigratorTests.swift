// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport

struct MigratorTests {
    static let logger = TestDatabase.logger

    @Test func fourConcurrentMigratorsApplyEachMigrationOnce() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let migrations = try Migration.load(from: TestDatabase.migrationsDirectory)
            let applied = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        // Each migrator has its own connections, as separate processes would.
                        try await DatabaseSession.with(db.url, maximumConnections: 1, logger: Self.logger) { client in
                            try await Migrator(client: client, logger: Self.logger).migrate(migrations)
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            #expect(applied.sorted() == migrations.map(\.version).sorted())
            #expect(try await db.scalar("SELECT count(*) FROM schema_migrations") == Int64(migrations.count))
            // And again: nothing left to do.
            #expect(try await Migrator(client: db.client, logger: Self.logger).migrate(migrations).isEmpty)
        }
    }

    @Test func aFailingMigrationLeavesTheDatabaseAsItWas() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let good = try Migration.load(from: TestDatabase.migrationsDirectory)
            let broken = Migration(version: "9999_broken", sql: "CREATE TABLE half_done (id int); SELECT no_such_column FROM half_done;")
            await #expect(throws: (any Error).self) {
                try await Migrator(client: db.client, logger: Self.logger).migrate(good + [broken])
            }
            #expect(try await db.scalar("SELECT count(*) FROM pg_tables WHERE tablename IN ('events', 'half_done')") == 0)
            #expect(try await Migrator(client: db.client, logger: Self.logger).migrate(good).count == good.count)
        }
    }
}
