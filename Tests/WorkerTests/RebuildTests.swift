// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Testing
import TestSupport
import PostgresNIO
import Shared

/// `worker rebuild`: state a buggy handler wrote is recomputed from the stored raw events.
@Suite(.timeLimit(.minutes(3)))
struct RebuildTests {
    static func rebuild(_ system: SystemHarness, _ arguments: String...) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await CommandLineTests.runSeparately(
            "worker", ["rebuild"] + arguments, environment: ["DATABASE_URL": system.db.url.urlString, "LOG_LEVEL": "error"])
    }

    @Test func wrongStateIsRecomputedFromTheEventsAndADryRunChangesNothing() async throws {
        try await SystemHarness.run { system in
            let user = "0c9a8b7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d"
            let start = Date().addingTimeInterval(-3_600)
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("7701", user: user, purchased: start), at: start)
            var renewal = subscription("7702", user: user, purchased: start.addingTimeInterval(600), expires: start.addingTimeInterval(60 * 86_400))
            renewal.originalTransactionId = "7701"
            try await system.notify("DID_RENEW", transaction: renewal, at: start.addingTimeInterval(600))
            try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_rb", user: user, product: "web.lifetime"))
            try await system.drain()
            let good = try await system.entitlements(userID: user)

            // A handler bug wrote this; the events are done, so a replay cannot help.
            try await system.db.client.query(
                "UPDATE entitlements SET status = 'expired', expires_at = now() - interval '1 day' WHERE entity_key = 'apple:sandbox:7701'",
                logger: TestDatabase.logger)
            try await system.db.client.query("UPDATE transactions SET status = 'failed' WHERE provider_transaction_id = '7702'", logger: TestDatabase.logger)

            let dry = try await Self.rebuild(system, "--user", user, "--dry-run")
            #expect(dry.status == 0, "\(dry.stderr)")
            #expect(dry.stdout.contains("dry run: 2 entities, 1 changed"), "\(dry.stdout)")
            #expect(dry.stdout.contains("status: expired → active"))
            #expect(dry.stdout.contains("transaction 7702: failed → succeeded"))
            #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE status = 'expired'") == 1)

            let run = try await Self.rebuild(system, "--user", user)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("2 entities, 1 changed"))
            let rebuilt = try await system.entitlements(userID: user)
            #expect(rebuilt.count == good.count)
            #expect(rebuilt.map { $0["id"] as? String } == good.map { $0["id"] as? String }, "the same entitlements, in the same order")
            for (before, after) in zip(good, rebuilt) {
                for field in ["status", "expires_at", "product_id", "is_active", "will_renew", "environment"] {
                    #expect("\(before[field] ?? "")" == "\(after[field] ?? "")", "\(field)")
                }
            }
            #expect(try await system.transactions(userID: user).count == 3)
            #expect(try await system.db.scalar("SELECT count(*) FROM applied_events") == 3)

            let again = try await Self.rebuild(system, "--entity", "apple:sandbox:7701")
            #expect(again.stdout.contains("1 entities, 0 changed"))
            #expect(try await Self.rebuild(system).status == 2)
        }
    }
}
