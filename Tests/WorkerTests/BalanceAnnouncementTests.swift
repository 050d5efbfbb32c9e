// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// Every balance change, whoever made it, is announced once as `balance.changed`, in ledger order
/// per user (each ledger row is queued as it is written, and taken off by ``BalanceAnnouncer``).
@Suite(.timeLimit(.minutes(3)))
struct BalanceAnnouncementTests {
    @Test func theAPIsOperatorsAndPurchasesChangesAreAnnouncedInLedgerOrder() async throws {
        try await SystemHarness.run { system in
            _ = try await CatalogStore(client: system.db.client, logger: TestDatabase.logger).add(
                CatalogProduct(id: "credits.500", type: .consumable, currencyGrants: ["credits": 500]))
            let ledger = BalanceStore(client: system.db.client, logger: TestDatabase.logger)
            _ = try await ledger.adjust(user: "user_order", try BalanceAdjustments(["credits": 10]), cause: .api, key: "d", digest: nil)
            _ = try await ledger.adjust(
                user: "user_order", try BalanceAdjustments(["credits": 5]), cause: .operator, key: nil, digest: nil, reason: "goodwill", actor: "alice")
            try await system.stripe(
                "payment_intent.succeeded", StripeObjects.paymentIntent("pi_order", user: "user_order", product: "credits.500"),
                id: "evt_order_paid")
            try await system.drain()
            _ = try await ledger.adjust(user: "user_order", try BalanceAdjustments(["credits": -15]), cause: .api, key: "s", digest: nil)

            #expect(try await system.announceBalances() == 4)
            #expect(try await system.announceBalances() == 0, "each once")
            var bodies: [[String: Any]] = []
            for try await payload in try await system.db.client.query(
                "SELECT convert_from(payload, 'UTF8') FROM outgoing_events WHERE type = 'balance.changed' ORDER BY sequence", logger: TestDatabase.logger
            ).decode(String.self) {
                bodies.append(try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any]))
            }
            let rows = bodies.compactMap { ($0["data"] as? [String: Any])?["balance_transaction"] as? [String: Any] }
            #expect(rows.map { ($0["balances"] as? [String: Int])?["credits"] } == [10, 15, 515, 500], "in ledger order")
            #expect(rows.map { $0["cause"] as? String } == ["api", "operator", "purchase", "api"])
            let causes = bodies.compactMap { $0["cause"] as? [String: Any] }
            #expect(causes.map { $0["origin"] as? String } == ["api", "operator", "webhook", "api"])
            #expect(causes[2]["event_id"] as? String == "evt_order_paid" && causes[2]["provider"] as? String == "stripe")
            let transactions = bodies.map { ($0["data"] as? [String: Any])?["transaction_id"] as? String }
            #expect(transactions == [nil, nil, "pi_order", nil])
        }
    }

    @Test func aGrantsKeyNamesItsProviderTransaction() {
        #expect(BalanceAnnouncer.providerTransactionID(ofKey: "grant:transaction:store_kit:production:2000:x") == "2000:x")
        #expect(BalanceAnnouncer.providerTransactionID(ofKey: "take_back:transaction:web_checkout:sandbox:pi_1") == "pi_1")
        #expect(BalanceAnnouncer.providerTransactionID(ofKey: "spend-7") == nil)
        // Every key CurrencyGrantDecision makes, and the expiry's of a grant, name it.
        var paid = TransactionState(source: .webCheckout, providerTransactionID: "pi_2", environment: .sandbox, status: .succeeded)
        paid.amount = 100
        let keys = CurrencyGrantDecision.keys(of: paid)
        let partly = [CurrencyGrantDecision.RefundedPart.Measure.money, .quantity].map {
            CurrencyGrantDecision.partialTakeBackKey(keys.takeBack, refunded: .init(measure: $0, numerator: 30, denominator: 100))
        }
        for key in [keys.grant, keys.takeBack, keys.giveBack, "expiry:" + keys.grant, keys.takeBack + "@2", keys.giveBack + "@1"] + partly {
            #expect(BalanceAnnouncer.providerTransactionID(ofKey: key) == "pi_2", "\(key)")
        }
        #expect(BalanceAnnouncer.providerTransactionID(ofKey: "grant:other:a:b:c") == nil)
    }

    /// Two batches and fifty ledger rows of `user` due, and an announcer under the test's lease.
    static func backlog(_ system: SystemHarness, user: String) async throws -> (BalanceAnnouncer, count: Int) {
        let count = BalanceAnnouncer.batch * 2 + 50
        try await system.db.client.query(
            """
            SELECT sluice_adjust_balances(\(user), '{"credits": 1}', 'api', 'k' || n, NULL, false, NULL, NULL, NULL)
            FROM generate_series(1, \(count)) AS n
            """, logger: TestDatabase.logger)
        let announcer = BalanceAnnouncer(
            client: system.db.client,
            lease: MaintenanceLease(client: system.db.client, task: "balance-announce", owner: "test", logger: TestDatabase.logger),
            onCreated: {}, logger: TestDatabase.logger)
        return (announcer, count)
    }

    /// More changes than one transaction announces (``BalanceAnnouncer/batch``): one pass goes on
    /// until every row is announced, so announcements keep up with any rate of changes.
    @Test func onePassAnnouncesMoreThanABatch() async throws {
        try await SystemHarness.run { system in
            let (announcer, count) = try await Self.backlog(system, user: "user_many")
            #expect(try await announcer.runOnce() == count)
            #expect(try await system.db.scalar("SELECT count(*) FROM balance_announcements_due") == 0)
        }
    }

    /// A backlog larger than a pass's budget: the pass ends after its batch in the normal way (not
    /// at its time limit, which is recorded as a failure), and the passes after it take the rest.
    @Test func aPassPastItsBudgetLeavesTheRestToTheNext() async throws {
        try await SystemHarness.run { system in
            let (announcer, _) = try await Self.backlog(system, user: "user_backlog")
            #expect(try await announcer.runOnce(budget: .zero) == BalanceAnnouncer.batch)
            #expect(try await system.db.strings(
                "SELECT COALESCE(last_error, 'none') FROM maintenance_leases WHERE task = 'balance-announce'") == ["none"])
            #expect(try await announcer.runOnce(budget: .zero) == BalanceAnnouncer.batch)
            #expect(try await announcer.runOnce(budget: .zero) == 50)
            #expect(try await system.db.scalar("SELECT count(*) FROM balance_announcements_due") == 0)
            #expect(BalanceAnnouncer.passBudget < BalanceAnnouncer.passTimeLimit)
        }
    }
}
