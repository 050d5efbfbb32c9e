// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport

/// `0005_environments`: rows written before environments existed get theirs from what was recorded
/// (the events' `environment` for Apple, test-mode keys and links for Stripe), and Sandbox Apple
/// state moves under its own keys.
struct EnvironmentMigrationTests {
    static let logger = TestDatabase.logger

    @Test func existingRowsTakeTheirEnvironmentFromWhatWasRecorded() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let (before, all) = try await db.migrate(before: "0005")
            #expect(before.count == 4)
            for statement: PostgresQuery in [
                // Apple: one Sandbox purchase (its events say so), one production purchase.
                "INSERT INTO events (source, external_id, type, environment, ordering_key, payload, state) VALUES ('apple', 'n1', 'SUBSCRIBED', 'Sandbox', '2000000001', '{}', 'done'), ('storekit', 't2', 'STOREKIT_TRANSACTION', 'Production', '1000000002', '{}', 'done')",
                "INSERT INTO entitlements (entity_key, user_id, product_id, product_type, source, status) VALUES ('apple:2000000001', 'u', 'pro', 'auto_renewable', 'store_kit', 'active'), ('apple:1000000002', 'u', 'pro', 'auto_renewable', 'store_kit', 'active')",
                "INSERT INTO transactions (source, provider_transaction_id, entitlement_key, user_id, status) VALUES ('store_kit', '2000000001', 'apple:2000000001', 'u', 'succeeded'), ('store_kit', '1000000002', 'apple:1000000002', 'u', 'succeeded')",
                "INSERT INTO provider_links (kind, scope, external_id, user_id, entitlement_key) VALUES ('apple_original_transaction', '', '2000000001', 'u', 'apple:2000000001'), ('apple_original_transaction', '', '1000000002', 'u', 'apple:1000000002')",
                "INSERT INTO applied_events (event_id, entity_key, outcome) VALUES (1, 'apple:2000000001', 'applied')",
                // Stripe: a test-mode subscription, a live one, and a test-mode payment known only by its link.
                "INSERT INTO entitlements (entity_key, user_id, product_id, product_type, source, status) VALUES ('stripe:test:subscription:sub_t', 'u', 'pro', 'auto_renewable', 'web_checkout', 'active'), ('stripe:acct_1:subscription:sub_l', 'u', 'pro', 'auto_renewable', 'web_checkout', 'active')",
                "INSERT INTO transactions (source, provider_transaction_id, entitlement_key, user_id, status) VALUES ('web_checkout', 'in_t', 'stripe:test:subscription:sub_t', 'u', 'succeeded'), ('web_checkout', 'in_l', 'stripe:acct_1:subscription:sub_l', 'u', 'succeeded'), ('web_checkout', 'pi_t', NULL, 'u', 'failed')",
                "INSERT INTO provider_links (kind, scope, external_id, transaction_key) VALUES ('stripe_payment_intent', 'acct_1:test:', 'pi_t', 'pi_t')",
            ] {
                try await db.client.query(statement, logger: Self.logger)
            }
            try await Migrator(client: db.client, logger: Self.logger).migrate(all, functions: [])

            #expect(try await db.strings("SELECT entity_key || ' ' || environment FROM entitlements ORDER BY entity_key") == [
                "apple:1000000002 production", "apple:sandbox:2000000001 sandbox",
                "stripe:acct_1:subscription:sub_l production", "stripe:test:subscription:sub_t sandbox",
            ])
            #expect(try await db.strings("SELECT provider_transaction_id || ' ' || environment || ' ' || coalesce(entitlement_key, '-') FROM transactions ORDER BY 1") == [
                "1000000002 production apple:1000000002", "2000000001 sandbox apple:sandbox:2000000001",
                "in_l production stripe:acct_1:subscription:sub_l", "in_t sandbox stripe:test:subscription:sub_t", "pi_t sandbox -",
            ])
            #expect(try await db.strings("SELECT external_id || ' [' || scope || '] ' || entitlement_key FROM provider_links WHERE kind = 'apple_original_transaction' ORDER BY 1") == [
                "1000000002 [] apple:1000000002", "2000000001 [sandbox:] apple:sandbox:2000000001",
            ])
            #expect(try await db.strings("SELECT entity_key FROM applied_events") == ["apple:sandbox:2000000001"])
        }
    }
}
