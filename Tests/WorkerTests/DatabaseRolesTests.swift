// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import DevSupport
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// The least-privilege roles of deploy/roles.sql and sql/0008_roles.sql, for real: the schema
/// migrated by its owner, ingest storing events and reading state but changing nothing else, the
/// worker applying events but changing no schema.
@Suite(.timeLimit(.minutes(3)))
struct DatabaseRolesTests {
    static let logger = TestDatabase.logger

    /// Runs deploy/roles.sql with psql, as an administrator would (the roles are the server's, so
    /// they are created once; the rest of the file runs in this database).
    static func createRoles(_ db: TestDatabase) async throws {
        for role in ["sluice_migrate", "sluice_ingest", "sluice_worker"] {
            try await db.client.query(
                PostgresQuery(unsafeSQL: "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '\(role)') THEN CREATE ROLE \(role) LOGIN; END IF; END $$"),
                logger: logger)
        }
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../deploy/roles.sql").standardized
        let script = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("CREATE ROLE") }.joined(separator: "\n")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", "-v", "ON_ERROR_STOP=1", "-q", db.url.urlString]
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        input.fileHandleForWriting.write(Data(script.utf8))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "deploy/roles.sql failed")
    }

    static func url(_ db: TestDatabase, role: String) throws -> DatabaseURL {
        var url = db.url
        url.username = role
        url.password = nil
        return url
    }

    static func refused(_ client: PostgresClient, _ sql: String) async -> Bool {
        do {
            try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger)
            return false
        } catch let error as PSQLError {
            return error.serverInfo?[.sqlState] == "42501"  // insufficient_privilege
        } catch {
            return false
        }
    }

    @Test func eachProcessGetsOnlyWhatItUses() async throws {
        try await TestDatabase.with(migrate: false) { db in
            try await Self.createRoles(db)
            try await DatabaseSession.with(try Self.url(db, role: "sluice_migrate"), logger: Self.logger) { client async throws in
                let applied = try await Migrator(client: client, logger: Self.logger).migrate(directory: TestDatabase.migrationsDirectory)
                #expect(applied.count >= 8)
                // The payment below grants gems: the worker's apply makes the grant as its role.
                _ = try await CatalogStore(client: client, logger: Self.logger).add(
                    CatalogProduct(id: "pro.lifetime", type: .nonConsumable, currencyGrants: ["gems": 3]))
            }
            let event = try SampleStripeEvents.event(
                id: "evt_roles", type: "payment_intent.succeeded", created: Date(),
                object: ["id": "pi_roles", "object": "payment_intent", "amount": 500, "amount_received": 500, "currency": "eur",
                         "status": "succeeded", "customer": "cus_r", "metadata": ["user_id": "user_roles", "product_id": "pro.lifetime"]],
                previousAttributes: nil, livemode: true, apiVersion: "2024-06-20", account: nil)
            let record = try StripeEventEnvelope.decode(ByteBuffer(data: event)).record(payload: ByteBuffer(data: event))

            try await DatabaseSession.with(try Self.url(db, role: "sluice_ingest"), logger: Self.logger) { ingest async throws in
                #expect(try await EventStore(client: ingest, logger: Self.logger).insert([record]) == [.stored])
                #expect(try await StateReader(client: ingest, tokenProof: nil, logger: Self.logger).entitlements(userID: "user_roles", environment: nil).isEmpty)
                // Registering an appAccountToken: the token's row and its queue event.
                let tokens = AppAccountTokens(client: ingest, logger: Self.logger)
                #expect(try await tokens.register(UUID(), userID: "user_roles") == .registered)
                for sql in [
                    "UPDATE entitlements SET status = 'active'", "DELETE FROM events", "UPDATE events SET state = 'done'",
                    "INSERT INTO provider_links (kind, external_id) VALUES ('stripe_customer', 'x')", "CREATE TABLE intruder (id int)",
                    "SELECT * FROM recovery_checkpoints", "UPDATE app_account_tokens SET user_id = 'thief'", "DELETE FROM app_account_tokens",
                    // A session-level lock on an entity's key would stall its events for as long as it is held.
                    "SELECT pg_advisory_lock(hashtextextended('stripe:payment:pi_roles', 0))", "SELECT pg_try_advisory_lock(1)",
                ] {
                    #expect(await Self.refused(ingest, sql), "ingest may not: \(sql)")
                }
            }

            let workerURL = try Self.url(db, role: "sluice_worker")
            try await DatabaseSession.with(workerURL, logger: Self.logger) { worker async throws in
                let settings = try WorkerSettings(environment: EnvironmentValues(["DATABASE_URL": workerURL.urlString, "MAX_ATTEMPTS": "1"]))
                try await DeliveryClients.with(RunCommand.httpConfiguration(settings)) { http in
                    let pools = RunCommand.pools(settings: settings, client: worker, http: http, metrics: nil, logger: Self.logger)
                    let job = try #require(try await pools.events.queue.dequeue(limit: 1, owner: "roles").first)
                    await pools.events.execute(job)
                }
                for sql in ["CREATE TABLE intruder (id int)", "DROP TABLE events", "ALTER TABLE entitlements ADD COLUMN x int", "TRUNCATE events"] {
                    #expect(await Self.refused(worker, sql), "the worker may not: \(sql)")
                }
            }
            try await DatabaseSession.with(try Self.url(db, role: "sluice_ingest"), logger: Self.logger) { ingest async throws in
                let found = try await StateReader(client: ingest, tokenProof: nil, logger: Self.logger).entitlements(userID: "user_roles", environment: nil)
                #expect(found.map(\.state.status) == [.active])

                // Web checkout (sql/0033), every statement ingest's checkout runs, as its role; the
                // worker's applied payment shows through the links and transactions it may read.
                let store = CheckoutStore(client: ingest, logger: Self.logger)
                let request = CheckoutStore.Request(
                    userID: "user_roles", productID: "pro.lifetime", environment: .production, kind: .payment, terms: "t", window: 3_600)
                guard case .make(let row) = try await store.claim(request, claimFor: 10, reuseWindow: 3_600) else {
                    Issue.record("ingest could not take the checkout slot")
                    return
                }
                #expect(try await store.saveCustomer("cus_r", of: "user_roles", in: .production) == "cus_r")
                try await store.unclaim(row.id)
                try await store.answer(row.id, customer: "cus_r", objects: .init(paymentIntent: "pi_roles", clientSecret: "pi_roles_secret_x"))
                #expect(try await store.outcome(of: row.id)?.status == .succeeded)
                guard case .make = try await store.claim(request, claimFor: 10, reuseWindow: 3_600) else {
                    Issue.record("a paid checkout did not free the slot")
                    return
                }
                try await store.abandon(row.id)
                #expect(await Self.refused(ingest, "UPDATE transactions SET status = 'succeeded'"), "ingest may not write the ledger")

                // Balances (sql/0035): ingest changes them only through sluice_adjust_balances.
                let balances = BalanceStore(client: ingest, logger: Self.logger)
                let deposit = try await balances.adjust(user: "user_roles", try BalanceAdjustments(["credits": 10]), cause: .api, key: "k", digest: nil)
                guard case .applied(let deposited) = deposit else {
                    Issue.record("ingest could not deposit: \(deposit)")
                    return
                }
                let history = try await balances.history(user: "user_roles", limit: 10)
                #expect(history.first == deposited && history.count == 2)
                #expect(history.last?.cause == .purchase && history.last?.applied == ["gems": 3], "the worker granted the payment's gems")
                for sql in [
                    "UPDATE balances SET amount = 1000000", "INSERT INTO balances (user_id, currency, amount) VALUES ('thief', 'credits', 99)",
                    "DELETE FROM balance_transactions", "UPDATE balance_transactions SET cause = 'api'",
                    // Taking a change off the announcer's queue would leave it unannounced.
                    "DELETE FROM balance_announcements_due",
                    // The worker's way to grant, which skips the spend checks: not ingest's.
                    #"SELECT sluice_deposit_balances('[{"user_id": "thief", "adjustments": {"credits": 99}, "cause": "api"}]')"#,
                ] {
                    #expect(await Self.refused(ingest, sql), "ingest may not: \(sql)")
                }
                #expect(try await balances.balances(user: "user_roles") == ["credits": 10, "gems": 3])
            }
        }
    }
}
