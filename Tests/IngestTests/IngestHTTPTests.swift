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

    @Test func healthReadinessAndMetrics() async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
            _ = try await client.postStripe(try StripeWebhookTests.event())
            _ = try await client.postStripe(try StripeWebhookTests.event(), secret: "whsec_forged")
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            #expect(metrics.status == .ok)
            #expect(metrics.text.contains(#"sluice_ingest_events_total{source="stripe",result="stored"} 1"#))
            #expect(metrics.text.contains(#"sluice_ingest_rejections_total{source="stripe",reason="bad_signature"} 1"#))
            #expect(metrics.text.contains(#"sluice_ingest_rejections_total{source="apple",reason="missing_oid"} 0"#))
            #expect(metrics.text.contains("sluice_ingest_store_duration_seconds_bucket"))
            #expect(metrics.text.contains(#"sluice_ingest_requests_total{route="/v1/webhooks/stripe",status="401"} 1"#))
        }
    }

    /// The database refuses connections (as when it is stopped): 503, never 2xx; then it is back
    /// and the same ingest stores again without a restart.
    @Test func aDatabaseOutageIs503ThenRecoversWithoutRestart() async throws {
        try await IngestHarness.withIngest(.live) { client, db async throws in
            let name = db.url.database
            try await Self.admin { admin in
                try await admin.query("ALTER DATABASE \(unescaped: name) ALLOW_CONNECTIONS false", logger: TestDatabase.logger)
                try await admin.query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(name) AND pid <> pg_backend_pid()",
                    logger: TestDatabase.logger)
            }
            let during = try await client.postStripe(try StripeWebhookTests.event("evt_during_outage"))
            #expect(during.status == .serviceUnavailable)
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .serviceUnavailable)
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
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
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
        try await IngestHarness.withIngest(.live) { client, db async throws in
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
