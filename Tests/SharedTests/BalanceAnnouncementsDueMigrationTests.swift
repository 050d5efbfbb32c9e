// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport

/// sql/0044 on a database of the version before it: the ledger rows that were not announced yet
/// are queued, those announced are not, `announced_at` is gone, and a row written afterwards is
/// queued by the trigger committed with the migration.
///
/// Five minutes: it migrates a database from the first migration, in two steps, and a
/// fresh-clone test stage on a loaded machine took 132 s.
@Suite(.timeLimit(.minutes(5)))
struct BalanceAnnouncementsDueMigrationTests {
    static let logger = TestDatabase.logger

    @Test func theRowsNotAnnouncedBeforeAreQueuedAndNoOthers() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let (before, all) = try await db.migrate(before: "0044")
            #expect(all.dropFirst(before.count).first?.version.hasPrefix("0044") == true, "the cut is right before 0044")
            try await db.client.query(
                """
                INSERT INTO balance_transactions (user_id, idempotency_key, adjustments, applied, balances, cause, announced_at)
                SELECT 'user_' || n, 'k' || n, '{"credits": 1}', '{"credits": 1}', '{"credits": 1}', 'api',
                       CASE WHEN n % 2 = 0 THEN now() END
                FROM generate_series(1, 6) AS n
                """, logger: Self.logger)
            try await Migrator(client: db.client, logger: Self.logger).migrate(directory: TestDatabase.migrationsDirectory)
            #expect(try await db.strings("""
                SELECT t.user_id FROM balance_announcements_due d JOIN balance_transactions t USING (position) ORDER BY d.position
                """) == ["user_1", "user_3", "user_5"])
            #expect(try await db.scalar("""
                SELECT count(*) FROM information_schema.columns WHERE table_name = 'balance_transactions' AND column_name = 'announced_at'
                """) == 0)
            try await db.client.query(
                "SELECT sluice_adjust_balances('user_7', '{\"credits\": 2}', 'api', 'k7', NULL, false, NULL, NULL, NULL)", logger: Self.logger)
            #expect(try await db.strings("""
                SELECT t.user_id FROM balance_announcements_due d JOIN balance_transactions t USING (position) ORDER BY d.position
                """) == ["user_1", "user_3", "user_5", "user_7"])
        }
    }
}
