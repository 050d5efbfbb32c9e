// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import Logging
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Ingest

@Suite(.timeLimit(.minutes(3)))
struct IngestHTTPTests {
    @Test func anUnknownPathIsAJSON404() async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            let response = try await client.execute(uri: "/v1/nothing-here", method: .get)
            #expect(response.status == .notFound)
            #expect(response.errorCode == "not_found")
            #expect(response.headers[HTTPField.Name("X-Request-Id")!] != nil)
        }
    }

    @Test func aWrongMethodIsA405() async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            let response = try await client.execute(uri: "/v1/webhooks/stripe", method: .get)
            #expect(response.status == .methodNotAllowed)
            #expect(response.errorCode == "method_not_allowed")
            #expect(response.headers[.allow] == "POST")
            #expect(try await client.execute(uri: "/healthz", method: .post).status == .methodNotAllowed)
        }
    }

    @Test func aBodyOverTheLimitIsA413AndNothingIsStored() async throws {
        try await IngestHarness.withIngest(.live, environment: ["MAX_BODY_BYTES": "2048"]) { client, db async throws in
            let body = try SampleStripeEvents.event(
                id: "evt_big", type: "payment_intent.succeeded",
                object: ["id": "pi_big", "object": "payment_intent", "description": String(repeating: "x", count: 4_000)])
            let response = try await client.postStripe(body)
            #expect(response.status == .contentTooLarge)
            #expect(response.errorCode == "too_large")
            #expect(try await db.eventCount() == 0)
            // The process is fine afterwards.
            #expect(try await client.postStripe(try StripeWebhookTests.event()).status == .ok)
        }
    }

    /// The built process: `/readyz` and `/metrics` answer on the admin port only; the public port
    /// has `/healthz` alone (for load balancers), and the metrics count what the public port saw.
    @Test func readinessAndMetricsAreOnTheAdminPortOnly() async throws {
        try await TestDatabase.with { db in
            let adminPort = try ServiceProcess.freePort()
            let ingest = try await ServiceProcess(
                "ingest", environment: TestCredentials.ingestEnvironment(databaseURL: db.url.urlString, overrides: ["INGEST_ADMIN_PORT": "\(adminPort)"]))
            defer { ingest.stop() }
            func get(_ path: String, port: Int) async throws -> RawHTTPConnection.Response? {
                try await RawHTTPConnection.exchange(port: port, Array("GET \(path) HTTP/1.1\r\nHost: s\r\n\r\n".utf8))
            }
            let stripe = try Array(StripeWebhookTests.event())
            let signed = StripeSigner.header(body: stripe, secret: TestCredentials.stripeSecret)
            for signature in [signed, StripeSigner.header(body: stripe, secret: "whsec_forged")] {
                _ = try await RawHTTPConnection.exchange(port: ingest.port, RawRequest.post(
                    "/v1/webhooks/stripe", headers: [("Content-Type", "application/json"), ("Stripe-Signature", signature)], body: stripe))
            }

            #expect(try await get("/healthz", port: ingest.port)?.status == 200)
            for path in ["/readyz", "/metrics"] { #expect(try await get(path, port: ingest.port)?.status == 404, "\(path)") }
            #expect(try await get("/healthz", port: adminPort)?.status == 200)
            #expect(try await get("/readyz", port: adminPort)?.status == 200)
            #expect(try await get("/v1/webhooks/stripe", port: adminPort)?.status == 404)
            let metrics = try #require(try await get("/metrics", port: adminPort))
            #expect(metrics.status == 200)
            #expect(metrics.body.contains(#"sluice_ingest_events_total{source="stripe",result="stored"} 1"#))
            #expect(metrics.body.contains(#"sluice_ingest_rejections_total{source="stripe",reason="bad_signature"} 1"#))
            #expect(metrics.body.contains(#"sluice_ingest_rejections_total{source="apple",reason="missing_oid"} 0"#))
            #expect(metrics.body.contains("sluice_ingest_store_duration_seconds_bucket"))
            #expect(metrics.body.contains(#"sluice_ingest_requests_total{route="/v1/webhooks/stripe",status="401"} 1"#))
        }
    }

    @Test func theAdminPortMustDifferFromThePublicOne() {
        let error = #expect(throws: ConfigurationError.self) {
            try IngestSettings(environment: EnvironmentValues(TestCredentials.ingestEnvironment(
                databaseURL: "postgres://u@localhost/db", overrides: ["INGEST_PORT": "8080", "INGEST_ADMIN_PORT": "8080"])))
        }
        #expect(error?.variable == "INGEST_ADMIN_PORT")
    }

    /// The database refuses connections (as when it is stopped): 503, never 2xx; then it is back
    /// and the same ingest stores again without a restart.
    @Test func aDatabaseOutageIs503ThenRecoversWithoutRestart() async throws {
        try await IngestHarness.withIngest(.live, storeTimeout: IngestSettings.defaultStoreTimeout) { client, db async throws in
            let name = db.url.database
            try await Self.admin { admin in
                try await admin.query("ALTER DATABASE \(unescaped: name) ALLOW_CONNECTIONS false", logger: TestDatabase.logger)
                try await admin.query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(name) AND pid <> pg_backend_pid()",
                    logger: TestDatabase.logger)
            }
            let during = try await client.postStripe(try StripeWebhookTests.event("evt_during_outage"))
            #expect(during.status == .serviceUnavailable)
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            try await Self.admin { admin in
                try await admin.query("ALTER DATABASE \(unescaped: name) ALLOW_CONNECTIONS true", logger: TestDatabase.logger)
            }
            var after = HTTPResponse.Status.serviceUnavailable
            for _ in 0..<20 where after != .ok {
                after = try await client.postStripe(try StripeWebhookTests.event("evt_after_outage")).status
                if after != .ok { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(after == .ok)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE external_id = 'evt_during_outage'") == 0)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE external_id = 'evt_after_outage'") == 1)
        }
    }

    static func admin(_ body: @Sendable @escaping (PostgresClient) async throws -> Void) async throws {
        try await DatabaseSession.with(try TestDatabase.serverURL(), maximumConnections: 1, logger: TestDatabase.logger, body)
    }
}

extension IngestHTTPTests {
    /// A database that accepts connections but never finishes the INSERT (the events table is
    /// locked): the request is answered 503 within the store timeout, never 2xx, and never hangs.
    @Test func aHungDatabaseIs503WithinTheTimeout() async throws {
        try await IngestHarness.withIngest(.live, storeTimeout: IngestSettings.defaultStoreTimeout) { client, db async throws in
            try await DatabaseSession.with(db.url, maximumConnections: 1, logger: TestDatabase.logger) { blocker in
                try await blocker.withConnection { connection in
                    try await connection.query("BEGIN", logger: TestDatabase.logger)
                    try await connection.query("LOCK TABLE events IN ACCESS EXCLUSIVE MODE", logger: TestDatabase.logger)
                    let started = ContinuousClock.now
                    let response = try await client.postStripe(try StripeWebhookTests.event("evt_while_hung"))
                    let waited = started.duration(to: .now)
                    try await connection.query("ROLLBACK", logger: TestDatabase.logger)
                    #expect(response.status == .serviceUnavailable)
                    #expect(waited < .seconds(20), "answered after \(waited)")
                }
            }
            // The process is fine afterwards.
            #expect(try await client.postStripe(try StripeWebhookTests.event("evt_after_hang")).status == .ok)
        }
    }
}
