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
                            try await Migrator(client: client, logger: Self.logger).migrate(migrations, functions: [])
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            #expect(applied.sorted() == migrations.map(\.version).sorted())
            #expect(try await db.scalar("SELECT count(*) FROM schema_migrations") == Int64(migrations.count))
            // And again: nothing left to do.
            #expect(try await Migrator(client: db.client, logger: Self.logger).migrate(migrations, functions: []).isEmpty)
        }
    }

    @Test func aFailingMigrationLeavesTheDatabaseAsItWas() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let good = try Migration.load(from: TestDatabase.migrationsDirectory)
            let first = Migration(version: "9998_first", sql: "CREATE TABLE first_half (id int);")
            let broken = Migration(version: "9999_broken", sql: "CREATE TABLE half_done (id int); SELECT no_such_column FROM half_done;")
            try await Migrator(client: db.client, logger: Self.logger).migrate(good, functions: [])
            await #expect(throws: MigrationError.self) {
                try await Migrator(client: db.client, logger: Self.logger).migrate(good + [first, broken], functions: [])
            }
            // The pending migrations ran in one transaction: neither the broken one nor the one before it left anything.
            #expect(try await db.scalar("SELECT count(*) FROM pg_tables WHERE tablename IN ('first_half', 'half_done')") == 0)
            #expect(try await db.scalar("SELECT count(*) FROM schema_migrations WHERE version LIKE '999%'") == 0)
            #expect(try await Migrator(client: db.client, logger: Self.logger).migrate(good + [first], functions: []) == ["9998_first"])
        }
    }

    /// The last pending migrations and the function files commit together: a function file
    /// that fails takes the migrations before it back, so no transaction ever sees a schema
    /// without the triggers made for it (sql/0044's queue without the trigger that fills it).
    @Test func theFunctionFilesCommitWithTheLastMigrations() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let good = try Migration.load(from: TestDatabase.migrationsDirectory)
            let migrator = Migrator(client: db.client, logger: Self.logger)
            try await migrator.migrate(good, functions: [])
            let table = Migration(version: "9998_watched", sql: "CREATE TABLE watched (id int); CREATE TABLE watch_log (id int);")
            let trigger = Migration(version: "functions/log_watched", sql: """
                CREATE OR REPLACE FUNCTION log_watched() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN INSERT INTO watch_log SELECT id FROM written; RETURN NULL; END $$;
                CREATE OR REPLACE TRIGGER watched_log AFTER INSERT ON watched
                    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION log_watched();
                """)
            let broken = Migration(version: "functions/broken", sql: "SELECT no_such_column FROM watched;")
            // A concurrent index build after it runs after the functions: they still commit with the table.
            let index = Migration(version: "9999_watched_index", sql: "\(Migration.noTransactionMarker)\nCREATE INDEX CONCURRENTLY watched_id ON watched (id);")
            await #expect(throws: MigrationError.self) {
                try await migrator.migrate(good + [table, index], functions: [trigger, broken])
            }
            #expect(try await db.scalar("SELECT count(*) FROM pg_tables WHERE tablename IN ('watched', 'watch_log')") == 0)
            #expect(try await db.scalar("SELECT count(*) FROM schema_migrations WHERE version LIKE '999%_watched%'") == 0)
            #expect(try await migrator.migrate(good + [table, index], functions: [trigger]) == ["9998_watched", "9999_watched_index"])
            try await db.client.query("INSERT INTO watched VALUES (1), (2)", logger: Self.logger)
            #expect(try await db.scalar("SELECT count(*) FROM watch_log") == 2)
        }
    }

    /// Each function's current body is in one file of `sql/functions/`, named after it; no
    /// migration defines one (a migration changes only the schema).
    @Test func eachFunctionIsDefinedInOneFileNamedAfterIt() throws {
        let functions = try Migration.loadFunctions(from: TestDatabase.migrationsDirectory)
        #expect(functions.count >= 8)
        for file in functions {
            let name = file.version.replacingOccurrences(of: "functions/", with: "")
            #expect(["FUNCTION", "PROCEDURE"].contains { file.sql.contains("CREATE OR REPLACE \($0) \(name)(") }, "\(file.version)")
            // It shares a schema with the app's own objects (sql/0048).
            #expect(name.hasPrefix("sluice_"), "\(file.version) is not named sluice_…")
            #expect(Self.definedFunctions(in: file.sql) == [name], "\(file.version)")
        }
        for migration in try Migration.load(from: TestDatabase.migrationsDirectory) {
            #expect(Self.definedFunctions(in: migration.sql).isEmpty, "\(migration.version) defines a function")
        }
    }

    /// Who may call each function is said once (sql/functions/sluice_allow_execute.sql), and every
    /// function file that the processes' roles call says it through that procedure, applied
    /// before them (``Migration/appliedFirst``; the others in name order).
    ///
    /// Least privilege by default: a new function file says who may call it, unless it is one of
    /// the helpers below, which stay callable by every role (PUBLIC's default) since the
    /// functions the worker calls as itself use them, and they change nothing.
    @Test func whoMayCallAFunctionIsSaidThroughOneProcedureAppliedFirst() throws {
        let publicHelpers: Set = [
            "sluice_allow_execute", "sluice_notify_user_changed", "sluice_queue_balance_announcements", "sluice_balance_lock",
            "sluice_call_array", "sluice_timestamp_us",
        ]
        let functions = try Migration.loadFunctions(from: TestDatabase.migrationsDirectory)
        #expect(functions.first?.version == "functions/sluice_allow_execute")
        #expect(functions.dropFirst().map(\.version) == functions.dropFirst().map(\.version).sorted())
        for file in functions {
            let name = file.version.replacingOccurrences(of: "functions/", with: "")
            #expect(!file.sql.lowercased().contains("grant execute") || name == Migration.appliedFirst, "\(file.version) grants by hand")
            if !publicHelpers.contains(name) {
                #expect(file.sql.contains("CALL sluice_allow_execute('\(name)("), "\(file.version) does not say who may call it")
            }
        }
    }

    /// The names a SQL text creates functions or procedures of, outside comments.
    static func definedFunctions(in sql: String) -> Set<String> {
        var names = Set<String>()
        for line in sql.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).hasPrefix("--") {
            for marker in ["CREATE FUNCTION ", "CREATE OR REPLACE FUNCTION ", "CREATE PROCEDURE ", "CREATE OR REPLACE PROCEDURE "] {
                guard let range = line.range(of: marker) else { continue }
                names.insert(String(line[range.upperBound...].prefix { $0 != "(" }))
            }
        }
        return names
    }

    /// `worker migrate`'s migrations then functions: the database holds exactly the functions of
    /// the files (none left over from an earlier body), and a function changed by hand is put
    /// back by the next migrate, which finds no migration to run.
    @Test func theFunctionFilesAreAppliedEveryTime() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let migrator = Migrator(client: db.client, logger: Self.logger)
            try await migrator.migrate(directory: TestDatabase.migrationsDirectory)
            let files = try Migration.loadFunctions(from: TestDatabase.migrationsDirectory).map { $0.version.replacingOccurrences(of: "functions/", with: "") }
            #expect(try await db.strings("""
                SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = 'public' ORDER BY 1
                """) == files.sorted())
            try await db.client.query(
                "CREATE OR REPLACE FUNCTION sluice_timestamp_us(p_microseconds bigint) RETURNS timestamptz LANGUAGE sql AS $$ SELECT NULL::timestamptz $$",
                logger: Self.logger)
            #expect(try await migrator.migrate(directory: TestDatabase.migrationsDirectory).isEmpty)
            #expect(try await db.scalar("SELECT extract(epoch FROM sluice_timestamp_us(1000000))::bigint") == 946_684_801)
        }
    }

    /// A database an earlier release migrated holds three functions without the `sluice_` prefix
    /// (`allow_execute`, and the trigger functions `notify_user_changed` and
    /// `queue_balance_announcements`). Migrating it drops them, and the same triggers call the
    /// prefixed ones: a ledger row is still queued for its announcement, once. A trigger of the
    /// app's own on one of those names keeps it (CASCADE would have dropped the app's trigger).
    @Test func anEarlierReleasesUnprefixedFunctionsAreReplaced() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let migrator = Migrator(client: db.client, logger: Self.logger)
            let migrations = try Migration.load(from: TestDatabase.migrationsDirectory)
            let earlier = migrations.filter { $0.version < "0048" }
            #expect(migrations.contains { $0.version == "0048_sluice_prefixed_functions" }, "0048 drops the unprefixed names")
            // The earlier release's three, as its sql/functions/ made them.
            let release = [
                Migration(version: "functions/allow_execute", sql: """
                    CREATE OR REPLACE PROCEDURE allow_execute(p_function regprocedure, VARIADIC p_roles text[]) LANGUAGE plpgsql AS $$
                    BEGIN EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', p_function); END $$;
                    """),
                Migration(version: "functions/notify_user_changed", sql: """
                    CREATE OR REPLACE FUNCTION notify_user_changed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
                    CREATE OR REPLACE TRIGGER transactions_notify_user AFTER INSERT OR UPDATE ON transactions
                        FOR EACH ROW EXECUTE FUNCTION notify_user_changed();
                    CREATE OR REPLACE TRIGGER entitlements_notify_user AFTER INSERT OR UPDATE ON entitlements
                        FOR EACH ROW EXECUTE FUNCTION notify_user_changed();
                    """),
                Migration(version: "functions/queue_balance_announcements", sql: """
                    CREATE OR REPLACE FUNCTION queue_balance_announcements() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN INSERT INTO balance_announcements_due (position) SELECT position FROM written; RETURN NULL; END $$;
                    CREATE OR REPLACE TRIGGER balance_transactions_announce AFTER INSERT ON balance_transactions
                        REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION queue_balance_announcements();
                    """),
            ]
            try await migrator.migrate(earlier, functions: release)
            // And one of the app's own, on its own table, using the same generic name: it stays.
            try await db.client.query("CREATE TABLE app_audit (id int)", logger: Self.logger)
            try await db.client.query(
                "CREATE TRIGGER app_audit_changed AFTER INSERT ON app_audit FOR EACH ROW EXECUTE FUNCTION notify_user_changed()",
                logger: Self.logger)
            #expect(try await migrator.migrate(directory: TestDatabase.migrationsDirectory).first == "0048_sluice_prefixed_functions")
            #expect(try await db.strings("SELECT tgname::text FROM pg_trigger WHERE tgrelid = 'app_audit'::regclass") == ["app_audit_changed"])
            try await db.client.query("DROP TABLE app_audit", logger: Self.logger)
            try await db.client.query("DROP FUNCTION notify_user_changed()", logger: Self.logger)
            #expect(try await db.strings("""
                SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = 'public' AND p.proname NOT LIKE 'sluice\\_%' ORDER BY 1
                """) == [])
            #expect(try await db.strings("""
                SELECT t.tgname || ' ' || p.proname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
                WHERE NOT t.tgisinternal ORDER BY 1
                """) == [
                    "balance_transactions_announce sluice_queue_balance_announcements", "entitlements_notify_user sluice_notify_user_changed",
                    "transactions_notify_user sluice_notify_user_changed",
                ])
            try await db.client.query(
                #"SELECT sluice_deposit_balances('[{"user_id": "a", "adjustments": {"credits": 5}, "cause": "api"}]')"#, logger: Self.logger)
            #expect(try await db.scalar("SELECT count(*) FROM balance_announcements_due") == 1)
        }
    }

    /// A migration that deadlocks with a running worker's batch (which holds the same tables,
    /// taken in the other order) is broken off by PostgreSQL, then run again and applied, while
    /// the worker's transaction commits: `worker migrate` next to running workers does not fail
    /// on a deadlock it could not have avoided. Without the retry the migration throws.
    @Test func aMigrationThatDeadlocksWithARunningWorkerIsTriedAgain() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let good = try Migration.load(from: TestDatabase.migrationsDirectory)
            try await Migrator(client: db.client, logger: Self.logger).migrate(good, functions: [])
            try await db.client.query("CREATE TABLE first_locked (id int)", logger: Self.logger)
            try await db.client.query("CREATE TABLE second_locked (id int)", logger: Self.logger)
            let locking = Migration(version: "9999_locks_in_order", sql: """
                LOCK TABLE first_locked IN EXCLUSIVE MODE;
                LOCK TABLE second_locked IN EXCLUSIVE MODE;
                CREATE TABLE after_the_locks (id int);
                """)
            try await DatabaseSession.with(db.url, maximumConnections: 1, logger: Self.logger) { worker in
                try await worker.withConnection { batch in
                    // The migrator must be the side PostgreSQL breaks off: it checks for a
                    // deadlock after its deadlock_timeout (1 s), the batch only after 30 s, so a
                    // loaded machine cannot make the batch the one found first.
                    try await batch.query("SET deadlock_timeout = '30s'", logger: Self.logger)
                    // The batch has written to second_locked; its transaction stays open.
                    try await batch.query("BEGIN", logger: Self.logger)
                    try await batch.query("INSERT INTO second_locked VALUES (1)", logger: Self.logger)
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            try await DatabaseSession.with(db.url, maximumConnections: 1, logger: Self.logger) { client in
                                _ = try await Migrator(client: client, logger: Self.logger).migrate(good + [locking], functions: [])
                            }
                        }
                        // Once the migrator holds first_locked and waits for second_locked, the
                        // batch asks for first_locked: a cycle, which PostgreSQL breaks after
                        // deadlock_timeout in the migrator, the first to wait.
                        while try await db.scalar(
                            "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'second_locked'::regclass") == 0 {
                            try await Task.sleep(for: .milliseconds(20))
                        }
                        do {
                            try await batch.query("INSERT INTO first_locked VALUES (1)", logger: Self.logger)
                            try await batch.query("COMMIT", logger: Self.logger)
                        } catch {
                            // Never leave the migrator waiting on a failed transaction's locks.
                            _ = try? await batch.query("ROLLBACK", logger: Self.logger)
                            throw error
                        }
                        try await group.waitForAll()
                    }
                }
            }
            #expect(try await db.scalar("SELECT count(*) FROM schema_migrations WHERE version = '9999_locks_in_order'") == 1)
            #expect(try await db.scalar("SELECT count(*) FROM pg_tables WHERE tablename = 'after_the_locks'") == 1)
            #expect(try await db.scalar("SELECT count(*) FROM first_locked") + db.scalar("SELECT count(*) FROM second_locked") == 2)
        }
    }

    /// `CREATE INDEX CONCURRENTLY` cannot run in a transaction: a migration marked
    /// `-- sluice:no-transaction` runs outside one, between the transactional runs around it.
    @Test func aNoTransactionMigrationBuildsAnIndexConcurrently() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let migrations = [
                Migration(version: "0001_table", sql: "CREATE TABLE big (id bigint, at timestamptz); INSERT INTO big SELECT g, now() FROM generate_series(1, 50000) g;"),
                Migration(version: "0002_index", sql: """
                    \(Migration.noTransactionMarker)
                    DROP INDEX CONCURRENTLY IF EXISTS big_at;
                    CREATE INDEX CONCURRENTLY big_at ON big (at);
                    """),
                Migration(version: "0003_more", sql: "CREATE TABLE after_index (id int);"),
            ]
            #expect(Migrator.groups(migrations).map { $0.map(\.version) } == [["0001_table"], ["0002_index"], ["0003_more"]])
            #expect(try await Migrator(client: db.client, logger: Self.logger).migrate(migrations, functions: []) == migrations.map(\.version))
            #expect(try await db.scalar("""
                SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                WHERE c.relname = 'big_at' AND i.indisvalid
                """) == 1)
            #expect(try await db.scalar("SELECT count(*) FROM pg_tables WHERE tablename = 'after_index'") == 1)
        }
    }

    /// A concurrent build that fails is not recorded, and runs again from its start once fixed.
    @Test func aFailedNoTransactionMigrationRunsAgainFromItsStart() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let table = Migration(version: "0001_table", sql: "CREATE TABLE pairs (a int); INSERT INTO pairs VALUES (1), (1);")
            let index = Migration(version: "0002_unique", sql: """
                \(Migration.noTransactionMarker)
                DROP INDEX CONCURRENTLY IF EXISTS pairs_a;
                CREATE UNIQUE INDEX CONCURRENTLY pairs_a ON pairs (a);
                """)
            let migrator = Migrator(client: db.client, logger: Self.logger)
            await #expect(throws: MigrationError.self) { try await migrator.migrate([table, index], functions: []) }
            #expect(try await db.scalar("SELECT count(*) FROM schema_migrations") == 1)
            // The failed build left an INVALID index behind; the rerun drops it and builds a valid one.
            #expect(try await db.scalar("SELECT count(*) FROM pg_class WHERE relname = 'pairs_a'") == 1)
            try await db.client.query("DELETE FROM pairs WHERE ctid = (SELECT max(ctid) FROM pairs)", logger: Self.logger)
            #expect(try await migrator.migrate([table, index], functions: []) == ["0002_unique"])
            #expect(try await db.scalar("""
                SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'pairs_a' AND i.indisvalid
                """) == 1)
        }
    }

    /// The shipped migrations leave the history's index built once, valid, under its new name.
    @Test func theHistoryIndexIsBuiltConcurrentlyAndValid() async throws {
        try await TestDatabase.with { db async throws in
            let migrations = try Migration.load(from: TestDatabase.migrationsDirectory)
            #expect(migrations.first { $0.version.hasPrefix("0009_") }?.runsInTransaction == false)
            #expect(try await db.scalar("""
                SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                WHERE c.relname = 'transactions_user_history' AND i.indisvalid
                """) == 1)
            #expect(try await db.scalar("SELECT count(*) FROM pg_class WHERE relname = 'transactions_user'") == 0)
        }
    }
    /// Rows written before `is_trial` (sql/0049) keep the reading of before, a subscription's
    /// period of no amount (or of a type not known yet) being a trial, as their currency grants
    /// were made; 0050 marks them outside a transaction. A worker of the release before, still
    /// running during a rolling update, sends no `is_trial`: its rows get the same reading
    /// (sluice_save_held_states), not `false`.
    @Test func rowsFromBeforeTrialsWereMarkedKeepTheReadingOfBefore() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let migrator = Migrator(client: db.client, logger: Self.logger)
            let migrations = try Migration.load(from: TestDatabase.migrationsDirectory)
            #expect(migrations.first { $0.version.hasPrefix("0050_") }?.runsInTransaction == false, "0050 scans the table unlocked")
            try await migrator.migrate(migrations.filter { $0.version < "0049" }, functions: [])
            try await db.client.query("""
                INSERT INTO transactions (source, provider_transaction_id, product_type, status, amount) VALUES
                    ('store_kit', 'trial', 'auto_renewable', 'succeeded', 0),
                    ('web_checkout', 'in_untyped', NULL, 'succeeded', 0),
                    ('store_kit', 'paid', 'auto_renewable', 'succeeded', 999),
                    ('store_kit', 'free_pack', 'consumable', 'succeeded', 0),
                    ('play_store', 'unknown_amount', 'auto_renewable', 'succeeded', NULL)
                """, logger: Self.logger)
            _ = try await migrator.migrate(directory: TestDatabase.migrationsDirectory)
            #expect(try await db.strings("SELECT provider_transaction_id FROM transactions WHERE is_trial ORDER BY 1") == ["in_untyped", "trial"])

            // An older worker's save, without is_trial.
            let older = """
                {"entitlements": [], "transactions": [
                    {"n": 1, "id": "\(UUID())", "source": "store_kit", "environment": "production", "provider_transaction_id": "older_trial",
                     "product_type": "auto_renewable", "status": "succeeded", "amount": 0},
                    {"n": 2, "id": "\(UUID())", "source": "store_kit", "environment": "production", "provider_transaction_id": "older_paid",
                     "product_type": "auto_renewable", "status": "succeeded", "amount": 999}]}
                """
            try await db.client.query("SELECT sluice_save_held_states(\(older)::jsonb)", logger: Self.logger)
            #expect(try await db.strings("""
                SELECT provider_transaction_id || '=' || is_trial FROM transactions WHERE provider_transaction_id LIKE 'older%' ORDER BY 1
                """) == ["older_paid=false", "older_trial=true"])

            // 0050 run again (by hand, or after it committed unrecorded) leaves a row of this release alone.
            try await db.client.query("""
                INSERT INTO transactions (source, provider_transaction_id, product_type, status, amount) VALUES
                    ('web_checkout', 'in_coupon', 'auto_renewable', 'succeeded', 0)
                """, logger: Self.logger)
            let marking = try #require(migrations.first { $0.version.hasPrefix("0050_") })
            try await db.client.query(PostgresQuery(unsafeSQL: marking.sql), logger: Self.logger)
            #expect(try await db.strings("SELECT is_trial::text FROM transactions WHERE provider_transaction_id = 'in_coupon'") == ["false"])
        }
    }
}
