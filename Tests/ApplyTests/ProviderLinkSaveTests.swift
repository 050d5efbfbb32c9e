// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport

/// ``StateStore/save(_:)-(ProviderLink)``: a link is added or completed, and a link already stored
/// with every value it carries is not written at all, so it takes no row lock: events that share a
/// link (one Stripe customer's many payments) do not wait for each other's commits.
@Suite(.timeLimit(.minutes(3)))
struct ProviderLinkSaveTests {
    static let logger = TestDatabase.logger

    @Test func anUnchangedLinkTakesNoLockAndANewValueStillWaitsForIt() async throws {
        try await TestDatabase.with { db in
            let link = ProviderLink(.stripeCustomer, "cus_shared", userID: "user_1", scope: "test:")
            try await db.client.withTransaction(logger: Self.logger) { try await StateStore(connection: $0, logger: Self.logger).save(link) }
            try await db.client.withTransaction(logger: Self.logger) { holder in
                // The holder saves it again, unchanged, and keeps its transaction open.
                try await StateStore(connection: holder, logger: Self.logger).save(link)
                try await db.client.withConnection { other in
                    try await other.query("BEGIN", logger: Self.logger)
                    try await other.query("SET LOCAL lock_timeout = '200ms'", logger: Self.logger)
                    // Neither an equal link nor one that carries less waits for the holder.
                    try await StateStore(connection: other, logger: Self.logger).save(link)
                    try await StateStore(connection: other, logger: Self.logger).save(ProviderLink(.stripeCustomer, "cus_shared", scope: "test:"))
                    try await other.query("COMMIT", logger: Self.logger)
                }
                // A link that changes the row writes it (and would wait for a holder that had).
                try await StateStore(connection: holder, logger: Self.logger).save(
                    ProviderLink(.stripeCustomer, "cus_shared", account: "acct_1", scope: "test:"))
                try await db.client.withConnection { other in
                    try await other.query("BEGIN", logger: Self.logger)
                    try await other.query("SET LOCAL lock_timeout = '200ms'", logger: Self.logger)
                    let error = await #expect(throws: PSQLError.self) {
                        try await StateStore(connection: other, logger: Self.logger).save(
                            ProviderLink(.stripeCustomer, "cus_shared", userID: "user_2", scope: "test:"))
                    }
                    #expect(error?.serverInfo?[.sqlState] == "55P03")
                    try await other.query("ROLLBACK", logger: Self.logger)
                }
            }
        }
    }

    @Test func aLinkIsAddedThenCompletedAndNilKeepsWhatIsStored() async throws {
        try await TestDatabase.with { db in
            try await db.client.withTransaction(logger: Self.logger) { connection in
                let store = StateStore(connection: connection, logger: Self.logger)
                try await store.save(ProviderLink(.stripeSubscription, "sub_1", userID: "user_1", scope: "test:"))
                try await store.save(ProviderLink(.stripeSubscription, "sub_1", entitlementKey: "stripe:test:subscription:sub_1", scope: "test:"))
                try await store.save(ProviderLink(.stripeSubscription, "sub_1", userID: "user_1", scope: "test:"))
                let stored = try await store.link(.stripeSubscription, "sub_1", scope: "test:")
                #expect(stored?.userID == "user_1")
                #expect(stored?.entitlementKey == "stripe:test:subscription:sub_1")
                try await store.save(ProviderLink(.stripeSubscription, "sub_1", userID: "user_2", scope: "test:"))
                #expect(try await store.link(.stripeSubscription, "sub_1", scope: "test:")?.userID == "user_2")
                #expect(try await store.link(.stripeSubscription, "sub_1", scope: "other:") == nil)
            }
        }
    }

    /// Many links in one statement end as saving them one by one would, the same id twice included
    /// (an upsert may not touch one row twice in a statement); a lookup of several ids answers in
    /// the order asked and leaves out the unknown ones and other scopes'.
    @Test func linksSavedAndLookedUpTogetherEndAsOneByOne() async throws {
        let links = [
            ProviderLink(.stripeCustomer, "cus_1", userID: "user_1", scope: "test:"),
            ProviderLink(.stripeSubscription, "sub_1", userID: "user_1", scope: "test:"),
            ProviderLink(.stripeSubscription, "sub_1", entitlementKey: "stripe:test:subscription:sub_1", scope: "test:"),
            ProviderLink(.stripeCustomer, "cus_1", userID: "user_2", account: "acct_1", scope: "test:"),
            ProviderLink(.stripeInvoice, "in_1", transactionKey: "in_1", scope: "other:"),
        ]
        let asked: [(kind: ProviderLink.Kind, externalID: String)] = [
            (.stripeSubscription, "sub_1"), (.stripeInvoice, "in_1"), (.stripeCharge, "ch_unknown"), (.stripeCustomer, "cus_1"),
        ]
        let together = try await TestDatabase.with { db in
            try await db.client.withTransaction(logger: Self.logger) { connection in
                let store = StateStore(connection: connection, logger: Self.logger)
                try await store.save(links)
                return try await store.links(asked, scope: "test:")
            }
        }
        let oneByOne = try await TestDatabase.with { db in
            try await db.client.withTransaction(logger: Self.logger) { connection in
                let store = StateStore(connection: connection, logger: Self.logger)
                for link in links { try await store.save(link) }
                var found: [ProviderLink] = []
                for (kind, id) in asked {
                    if let link = try await store.link(kind, id, scope: "test:") { found.append(link) }
                }
                return found
            }
        }
        #expect(together == oneByOne)
        #expect(together == [
            ProviderLink(.stripeSubscription, "sub_1", userID: "user_1", entitlementKey: "stripe:test:subscription:sub_1", scope: "test:"),
            ProviderLink(.stripeCustomer, "cus_1", userID: "user_2", account: "acct_1", scope: "test:"),
        ])
    }

    /// Links already stored, links that repeat one of them or carry less, and one key given three
    /// times with values that complete and contradict each other: the one statement leaves every
    /// row as one call a link, in the order given, would.
    @Test func oneStatementLeavesWhatOneCallALinkLeaves() async throws {
        let stored = [
            ProviderLink(.stripeCustomer, "cus_1", userID: "user_1", account: "acct_1", scope: "test:"),
            ProviderLink(.stripeSubscription, "sub_1", userID: "user_1", entitlementKey: "e1", scope: "test:"),
        ]
        let links = [
            ProviderLink(.stripeCustomer, "cus_1", userID: "user_1", scope: "test:"),
            ProviderLink(.stripeSubscription, "sub_1", entitlementKey: "e2", scope: "test:"),
            ProviderLink(.stripeCharge, "ch_1", userID: "user_1", scope: "test:"),
            ProviderLink(.stripeCharge, "ch_1", transactionKey: "ch_1", scope: "test:"),
            ProviderLink(.stripeCharge, "ch_1", userID: "user_2", scope: "test:"),
            ProviderLink(.stripeCustomer, "cus_1", account: "acct_2", scope: "test:"),
            ProviderLink(.stripeSubscription, "sub_1", userID: "user_1", entitlementKey: "e1", scope: "test:"),
        ]
        func saved(oneByOne: Bool) async throws -> [String] {
            try await TestDatabase.with { db in
                try await db.client.withTransaction(logger: Self.logger) { connection in
                    let store = StateStore(connection: connection, logger: Self.logger)
                    try await store.save(stored)
                    if oneByOne {
                        for link in links { try await store.save(link) }
                    } else {
                        try await store.save(links)
                    }
                }
                return try await db.strings(
                    """
                    SELECT concat_ws('|', kind, scope, external_id, coalesce(user_id, ''), coalesce(entitlement_key, ''),
                        coalesce(transaction_key, ''), coalesce(account, ''))
                    FROM provider_links ORDER BY 1
                    """)
            }
        }
        let together = try await saved(oneByOne: false)
        #expect(together == (try await saved(oneByOne: true)))
        #expect(together == [
            "stripe_charge|test:|ch_1|user_2||ch_1|",
            "stripe_customer|test:|cus_1|user_1|||acct_2",
            "stripe_subscription|test:|sub_1|user_1|e1||",
        ])
    }

    /// "Already stored?" is an index probe a link, never a scan of provider_links, whatever the
    /// plan PL/pgSQL keeps (a generic one from the sixth call on, which cannot know how few links
    /// the JSON holds). Written as `NOT EXISTS`, the check is a hash anti join over a scan of the
    /// table at this size (2,000 rows; an index probe again from about 20,000).
    @Test func savingLinksNeverScansTheTable() async throws {
        try await TestDatabase.with { db in
            try await db.client.withConnection { connection in
                try await connection.query(
                    """
                    INSERT INTO provider_links (kind, scope, external_id, user_id)
                    SELECT 'stripe_charge', 'test:', 'ch_' || n, 'user_' || n FROM generate_series(1, 2000) AS n
                    """, logger: Self.logger)
                try await connection.query("ANALYZE provider_links", logger: Self.logger)
                func scans() async throws -> Int64 {
                    try await connection.query("SELECT pg_stat_force_next_flush()", logger: Self.logger)
                    try await connection.query("SELECT pg_stat_clear_snapshot()", logger: Self.logger)
                    for try await count in try await connection.query(
                        "SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'provider_links'", logger: Self.logger
                    ).decode(Int64.self) { return count }
                    return -1
                }
                let before = try await scans()
                for call in 1...8 {
                    let links = (1...20).map { n in
                        ProviderLink(.stripeCharge, "ch_\(call * 100 + n)", userID: n % 2 == 0 ? "user_\(call * 100 + n)" : "moved", scope: "test:")
                    }
                    try await StateStore(connection: connection, logger: Self.logger).save(links)
                }
                #expect(try await scans() == before)
                #expect(before >= 0)
            }
        }
    }
}
