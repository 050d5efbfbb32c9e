// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// What a leaked ingest database credential can no longer do (docs/operations.md, "Security
/// model"; issue 37, findings 1 and 2), done for real: the least-privilege roles of
/// deploy/roles.sql, the built `ingest` and `worker` running as them with `EVENT_SIGNING_KEY`, and
/// the attacker's SQL sent as `sluice_ingest`.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct IngestCredentialAttackTests {
    static let signingKey = "attack-tests-event-signing-key-0123456789abcdef"

    /// A database migrated by its owner role, with the three roles.
    static func withRoles(_ body: @escaping @Sendable (TestDatabase) async throws -> Void) async throws {
        try await TestDatabase.with(migrate: false) { db in
            try await DatabaseRolesTests.createRoles(db)
            try await DatabaseSession.with(try DatabaseRolesTests.url(db, role: "sluice_migrate"), logger: TestDatabase.logger) { client async throws in
                _ = try await Migrator(client: client, logger: TestDatabase.logger).migrate(directory: TestDatabase.migrationsDirectory)
            }
            try await body(db)
        }
    }

    static func workerEnvironment(_ db: TestDatabase) throws -> [String: String] {
        [
            "DATABASE_URL": try DatabaseRolesTests.url(db, role: "sluice_worker").urlString, "EVENT_SIGNING_KEY": signingKey,
            "LOG_LEVEL": "error", "WORKER_POLL_INTERVAL_MS": "100", "MAX_ATTEMPTS": "1",
        ]
    }

    static func stripePayment(_ event: String, intent: String, user: String) throws -> ByteBuffer {
        ByteBuffer(data: try SampleStripeEvents.event(
            id: event, type: "payment_intent.succeeded",
            object: StripeObjects.paymentIntent(intent, user: user, product: "pro.lifetime"), livemode: true))
    }

    /// `sql` as `sluice_ingest`: whether it was refused for want of a privilege.
    static func refusedToIngest(_ db: TestDatabase, _ sql: String) async throws -> Bool {
        try await DatabaseSession.with(try DatabaseRolesTests.url(db, role: "sluice_ingest"), logger: TestDatabase.logger) { ingest async in
            await DatabaseRolesTests.refused(ingest, sql)
        }
    }

    static func eventually(_ seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
        try await RecoveryProcessTests.eventually(seconds, condition)
    }

    /// Finding 1: a row with a chosen id (or state) cannot be written, and a row without a valid
    /// proof is never applied, whatever its id — by the pool or by `worker rebuild`.
    @Test func ingestsCredentialCannotChooseARowsIdOrStateNorHaveAnUnprovenRowApplied() async throws {
        try await Self.withRoles { db in
            let columns = "source, external_id, type, ordering_key, payload, origin"
            let forged = "'stripe', 'evt_forged', 'payment_intent.succeeded', 'pi_forged', '\\x7b7d'::bytea, 'webhook'"
            // The attack of the review: a row at id -1, at or below any cutover. And the other
            // columns that decide when and whether a row runs.
            #expect(try await Self.refusedToIngest(db, "INSERT INTO events (id, \(columns)) OVERRIDING SYSTEM VALUE VALUES (-1, \(forged))"))
            for (column, value) in [("state", "'done'"), ("attempts", "5"), ("run_at", "now()"), ("locked_by", "'x'"), ("locked_until", "now()"),
                                    ("last_error", "'x'"), ("finished_at", "now()"), ("received_at", "now()")] {
                #expect(try await Self.refusedToIngest(db, "INSERT INTO events (\(columns), \(column)) VALUES (\(forged), \(value))"), "\(column)")
            }

            // Stored before the worker first runs with the key: given a proof at its start, applied.
            let early = try Self.stripePayment("evt_early", intent: "pi_early", user: "early")
            try await db.client.query(
                "INSERT INTO events (\(unescaped: columns)) VALUES ('stripe', 'evt_early', 'payment_intent.succeeded', 'pi_early', \(early), 'webhook')",
                logger: TestDatabase.logger)
            let worker = try await ServiceProcess("worker", arguments: ["run"], environment: try Self.workerEnvironment(db))
            defer { worker.stop() }
            #expect(try await Self.eventually(30) {
                try await db.scalar("SELECT count(*) FROM entitlements WHERE user_id = 'early' AND status = 'active'") == 1
            }, "\(worker.log(tail: 2_000))")

            // Rows stored from now on: ingest's credential may still write the columns ingest writes,
            // so it can store a row without proof; and the worst case, a row at id -2 without proof
            // (written by the owner, who alone may still choose an id). Neither is applied.
            #expect(try await !Self.refusedToIngest(db, "INSERT INTO events (\(columns), subtype, environment, event_time, proof) VALUES (\(forged), NULL, 'live', now(), NULL)"))
            let stolen = try Self.stripePayment("evt_minus_two", intent: "pi_mallory", user: "mallory")
            try await db.client.query(
                """
                INSERT INTO events (id, \(unescaped: columns)) OVERRIDING SYSTEM VALUE
                VALUES (-2, 'stripe', 'evt_minus_two', 'payment_intent.succeeded', 'pi_mallory', \(stolen), 'webhook')
                """, logger: TestDatabase.logger)
            #expect(try await Self.eventually(30) {
                try await db.scalar("SELECT count(*) FROM events WHERE state = 'dead'") == 2
            }, "\(worker.log(tail: 2_000))")
            #expect(try await db.scalar("SELECT count(*) FROM entitlements WHERE user_id = 'mallory'") == 0)
            let errors = try await db.strings("SELECT coalesce(last_error, '') FROM events WHERE state = 'dead'")
            #expect(errors.allSatisfy { $0.contains("not stored by Sluice") }, "\(errors)")

            // A refund nobody sent, tied to early's payment as if it had been applied under the old
            // id rule: `worker rebuild` will not apply it, with the key or without.
            let entity = try #require(try await db.strings("SELECT entity_key FROM entitlements WHERE user_id = 'early'").first)
            let refund = ByteBuffer(data: try SampleStripeEvents.event(
                id: "evt_refund", type: "charge.refunded", object: StripeObjects.charge("ch_early", paymentIntent: "pi_early"), livemode: true))
            try await db.client.query(
                """
                WITH forged AS (
                    INSERT INTO events (id, \(unescaped: columns), state) OVERRIDING SYSTEM VALUE
                    VALUES (-3, 'stripe', 'evt_refund', 'charge.refunded', 'pi_early', \(refund), 'webhook', 'done') RETURNING id
                )
                INSERT INTO applied_events (event_id, entity_key, outcome) SELECT id, \(entity), 'applied' FROM forged
                """, logger: TestDatabase.logger)
            let operatorEnvironment = ["DATABASE_URL": db.url.urlString, "LOG_LEVEL": "error"]
            let withoutKey = try await ServiceProcess.runToExit("worker", arguments: ["rebuild", "--entity", entity], environment: operatorEnvironment)
            #expect(withoutKey.status != 0 && withoutKey.output.contains("EVENT_SIGNING_KEY"), "\(withoutKey.output)")
            let rebuilt = try await ServiceProcess.runToExit(
                "worker", arguments: ["rebuild", "--entity", entity, "--json"],
                environment: operatorEnvironment.merging(["EVENT_SIGNING_KEY": Self.signingKey]) { $1 })
            #expect(rebuilt.status == 1 && rebuilt.output.contains("not rebuilt") && rebuilt.output.contains("-3"), "\(rebuilt.output)")
            #expect(try await db.strings("SELECT status FROM entitlements WHERE user_id = 'early'") == ["active"])
            // Without the forged event, the entity's proven events rebuild it.
            try await db.client.query("DELETE FROM applied_events WHERE event_id = -3", logger: TestDatabase.logger)
            let clean = try await ServiceProcess.runToExit(
                "worker", arguments: ["rebuild", "--entity", entity],
                environment: operatorEnvironment.merging(["EVENT_SIGNING_KEY": Self.signingKey]) { $1 })
            #expect(clean.status == 0 && clean.output.contains("unchanged"), "\(clean.output)")
        }
    }

    /// Finding 2: a token row written with ingest's credential makes nobody the owner of the
    /// purchases made with the token: not the worker, not the read API, not a sync.
    @Test func aTokenRowWrittenWithIngestsCredentialTakesOverNoPurchase() async throws {
        try await Self.withRoles { db in
            let victimToken = UUID().uuidString.lowercased()
            #expect(try await !Self.refusedToIngest(db, "INSERT INTO app_account_tokens (token, user_id) VALUES ('\(victimToken)', 'thief')"))
            #expect(try await Self.refusedToIngest(db, "INSERT INTO app_account_token_owners (token, user_id) VALUES ('\(victimToken)', 'thief')"))

            let ingestEnvironment = TestCredentials.ingestEnvironment(
                databaseURL: try DatabaseRolesTests.url(db, role: "sluice_ingest").urlString,
                overrides: ["EVENT_SIGNING_KEY": Self.signingKey, "LOG_LEVEL": "error"])
            let ingest = try await ServiceProcess("ingest", environment: ingestEnvironment)
            defer { ingest.stop() }
            let worker = try await ServiceProcess("worker", arguments: ["run"], environment: try Self.workerEnvironment(db))
            defer { worker.stop() }
            do {
                /// One request on its own connection to the `ingest` process.
                func send(_ method: String, _ path: String, key: String? = nil, body: Data = Data()) async throws -> (Int, String) {
                    var head = "\(method) \(path) HTTP/1.1\r\nHost: sluice\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
                    if let key { head += "Authorization: Bearer \(key)\r\n" }
                    let response = try #require(try await RawHTTPConnection.exchange(port: ingest.port, Array((head + "\r\n").utf8) + Array(body)))
                    return (response.status, response.body)
                }

                // The victim buys with the token.
                let purchase = subscription("3700001", user: victimToken)
                let notification = try TestCredentials.signer.notificationBody(
                    type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: purchase, renewal: nil, signedDate: Date(),
                    appAppleId: TestCredentials.appAppleID)
                #expect(try await send("POST", "/v1/webhooks/appstore-notifications?sandbox=true", body: notification).0 == 200)
                #expect(try await Self.eventually(30) {
                    try await db.scalar("SELECT count(*) FROM entitlements WHERE user_id = \(victimToken)") == 1
                }, "the worker follows no unproven row: \(worker.log(tail: 2_000))")

                // The thief sees nothing through the read API, and cannot sync the purchase.
                let read = try await send("GET", "/v1/iap/entitlements?user_id=thief", key: TestCredentials.apiKey)
                #expect(read.0 == 200 && read.1.contains("entitlements") && !read.1.contains("pro.monthly"), "\(read.1)")
                let sync = try JSONEncoder().encode(["signed_transaction": try TestCredentials.signer.sign(purchase), "user_id": "thief"])
                let synced = try await send("POST", "/v1/iap/storekit-transactions", key: TestCredentials.clientAPIKey, body: sync)
                #expect(synced.0 == 409 && synced.1.contains("user_mismatch"), "\(synced.1)")

                // The victim's own registration still goes through, and moves the purchase to them.
                let registered = try await send(
                    "PUT", "/v1/iap/users/victim/app-account-token", key: TestCredentials.apiKey,
                    body: Data(#"{"app_account_token":"\#(victimToken)"}"#.utf8))
                #expect(registered.0 == 201, "\(registered.1)")
                #expect(try await Self.eventually(30) {
                    try await db.scalar("SELECT count(*) FROM entitlements WHERE user_id = 'victim'") == 1
                }, "\(worker.log(tail: 2_000))")
                #expect(try await db.scalar("SELECT count(*) FROM entitlements WHERE user_id = 'thief'") == 0)
                let victim = try await send("GET", "/v1/iap/entitlements?user_id=victim", key: TestCredentials.apiKey)
                #expect(victim.1.contains("pro.monthly"), "\(victim.1)")

                // A second token whose registration key the attacker took first, with a forged
                // registration event: the real registration is refused as blocked, never told 201
                // and dropped; the forged event is never applied.
                let second = UUID().uuidString.lowercased()
                let forgedEvent = #"{"app_account_token":"\#(second)","user_id":"thief"}"#
                #expect(try await !Self.refusedToIngest(db, """
                    INSERT INTO events (source, external_id, type, ordering_key, payload, origin)
                    VALUES ('account', 'app_account_token:\(second)', 'app_account_token.registered', '\(second)', convert_to('\(forgedEvent)', 'UTF8'), 'webhook')
                    """))
                let blocked = try await send(
                    "PUT", "/v1/iap/users/victim/app-account-token", key: TestCredentials.apiKey,
                    body: Data(#"{"app_account_token":"\#(second)"}"#.utf8))
                #expect(blocked.0 == 503 && blocked.1.contains("registration_blocked"), "\(blocked) \(ingest.log(tail: 1_500))")
                #expect(try await Self.eventually(30) {
                    try await db.scalar("SELECT count(*) FROM events WHERE source = 'account' AND state = 'dead'") == 1
                }, "\(worker.log(tail: 2_000))")
                #expect(try await db.scalar("SELECT count(*) FROM app_account_token_owners WHERE token = \(UUID(uuidString: second)!)") == 0)
            }
        }
    }
}
