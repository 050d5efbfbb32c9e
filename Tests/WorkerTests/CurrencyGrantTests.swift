// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// Currencies granted by catalog products, through the real ingest, worker and PostgreSQL
/// (docs/credits.md): granted once with the purchase, taken back on a refund, given back.
@Suite(.timeLimit(.minutes(3)))
struct CurrencyGrantTests {
    static func balances(_ system: SystemHarness, _ user: String) async throws -> [String: Int64] {
        try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).balances(user: user)
    }

    static func addCatalog(_ system: SystemHarness) async throws {
        let catalog = CatalogStore(client: system.db.client, logger: TestDatabase.logger)
        _ = try await catalog.add(CatalogProduct(id: "credits.500", type: .consumable, currencyGrants: ["credits": 500, "gems": 2]))
        _ = try await catalog.add(CatalogProduct(
            id: "pro.monthly", type: .autoRenewable, accessLevels: ["pro"], currencyGrants: ["credits": 1_000],
            trialCurrencyGrants: ["credits": 100]))
    }

    /// Bought on the web: three events about one payment grant once; the refund takes all of it
    /// back (the user spent some: the rest is recorded as what could not be taken).
    @Test func aPackIsGrantedOnceAndTakenBackOnItsRefund() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let paid = Date().addingTimeInterval(-60).rounded
            let intent = StripeObjects.paymentIntent("pi_pack", user: "user_pack", product: "credits.500", charge: "ch_pack")
            for _ in 0..<3 { try await system.stripe("payment_intent.succeeded", intent, at: paid) }
            try await system.drain(workers: 3)
            #expect(try await Self.balances(system, "user_pack") == ["credits": 500, "gems": 2])
            let store = BalanceStore(client: system.db.client, logger: TestDatabase.logger)
            _ = try await store.adjust(user: "user_pack", try BalanceAdjustments(["credits": -450]), cause: .api, key: "spend", digest: nil)

            try await system.stripe("charge.refunded", StripeObjects.charge("ch_pack", paymentIntent: "pi_pack"), at: paid.addingTimeInterval(5))
            try await system.drain()
            #expect(try await Self.balances(system, "user_pack") == ["credits": 0, "gems": 0])
            let rows = try await store.history(user: "user_pack", limit: 10)
            #expect(rows.map(\.cause) == [.refund, .api, .purchase])
            #expect(rows.first?.shortfall == ["credits": 450], "what was spent could not be taken back")
            #expect(try await system.announceBalances() == 3)
            let announced = try await system.db.scalar("SELECT count(*) FROM outgoing_events WHERE type = 'balance.changed' AND user_id = 'user_pack'")
            #expect(announced == 3, "the grant, the API's spend and the take-back, each once")
            #expect(try await system.announceBalances() == 0)
        }
    }

    /// Bought in the App Store: the first period and each renewal grant, a trial its own amount,
    /// and a prorated refund takes back its share, rounded up.
    @Test func aSubscriptionGrantsEachPeriodAndAProratedRefundTakesItsShare() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let user = UUID().uuidString.lowercased()
            let start = Date().addingTimeInterval(-40 * 86_400).rounded
            var trial = subscription("31001", user: user, purchased: start)
            trial.price = 0
            trial.offerType = 1
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: trial, at: start)
            try await system.drain()
            #expect(try await Self.balances(system, user) == ["credits": 100], "the trial's amount")

            var renewal = subscription("31002", user: user, purchased: start.addingTimeInterval(30 * 86_400))
            renewal.originalTransactionId = "31001"
            try await system.notify("DID_RENEW", transaction: renewal, at: start.addingTimeInterval(30 * 86_400))
            try await system.notify("DID_RENEW", transaction: renewal, at: start.addingTimeInterval(30 * 86_400 + 1))
            try await system.drain(workers: 2)
            #expect(try await Self.balances(system, user) == ["credits": 1_100], "a renewal, once")

            var refunded = renewal
            refunded.revocationDate = start.addingTimeInterval(31 * 86_400).millisecondsSince1970
            refunded.revocationReason = 0
            refunded.revocationType = "REFUND_PRORATED"
            refunded.revocationPercentage = 33_333
            try await system.notify("REFUND", transaction: refunded, at: start.addingTimeInterval(31 * 86_400))
            try await system.drain()
            let rows = try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).history(user: user, limit: 10)
            #expect(rows.map(\.cause) == [.refund, .renewal, .purchase])
            let taken = try #require(rows.first?.applied["credits"])
            // 33.333 % of $9.99 is 333 cents refunded; 333/999 of 1,000 credits is 333.3, rounded up.
            #expect(taken == -334, "\(rows.first.map(String.init(describing:)) ?? "")")
            #expect(try await Self.balances(system, user) == ["credits": 766])
        }
    }

    /// One purchase by every path (its notification, the app's sync of it) grants once; `worker
    /// rebuild` replays its events and changes no balance.
    @Test func everyPathAndARebuildGrantOnce() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let user = UUID().uuidString.lowercased()
            let bought = Date().addingTimeInterval(-600).rounded
            let purchase = subscription("32001", user: user, purchased: bought)
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: purchase, at: bought)
            try await system.sync(purchase, userID: user)
            try await system.drain()
            #expect(try await Self.balances(system, user) == ["credits": 1_000])
            let run = try CommandLineTests.runSeparately(
                "worker", ["rebuild", "--user", user], environment: ["DATABASE_URL": system.db.url.urlString, "LOG_LEVEL": "error"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try await Self.balances(system, user) == ["credits": 1_000])
            #expect(try await system.db.scalar("SELECT count(*) FROM balance_transactions") == 1)
        }
    }

    /// A subscription bought and renewed before Sluice knew its user (notifications without an
    /// `appAccountToken`), then synced by the app for the user: both periods are granted, once.
    @Test func purchasesPaidBeforeTheirUserWasKnownAreGrantedWhenItIs() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let start = Date().addingTimeInterval(-40 * 86_400).rounded
            let first = subscription("33001", user: nil, purchased: start)
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: first, at: start)
            var renewal = subscription("33002", user: nil, purchased: start.addingTimeInterval(30 * 86_400))
            renewal.originalTransactionId = "33001"
            try await system.notify("DID_RENEW", transaction: renewal, at: start.addingTimeInterval(30 * 86_400))
            try await system.drain()
            #expect(try await system.db.scalar("SELECT count(*) FROM balance_transactions") == 0, "nobody to grant to yet")

            try await system.sync(renewal, userID: "user_late")
            try await system.drain()
            #expect(try await Self.balances(system, "user_late") == ["credits": 2_000], "both periods")
            #expect(try await system.postSync(renewal, userID: "user_late").status == .ok, "the same sync again: stored before")
            try await system.notify("DID_RENEW", transaction: renewal, at: start.addingTimeInterval(30 * 86_400 + 60))
            try await system.drain()
            #expect(try await system.db.scalar("SELECT count(*) FROM balance_transactions") == 2, "granted once each")
        }
    }

    /// A dispute takes the pack's grant back; the dispute won gives back what it took, once.
    @Test func aDisputeTakesTheGrantBackAndWinningItGivesItBack() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let paid = Date().addingTimeInterval(-120).rounded
            try await system.stripe(
                "payment_intent.succeeded", StripeObjects.paymentIntent("pi_dispute", user: "user_dispute", product: "credits.500", charge: "ch_dispute"),
                at: paid)
            try await system.drain()
            try await system.stripe(
                "charge.dispute.created", StripeObjects.dispute("dp_1", charge: "ch_dispute", paymentIntent: "pi_dispute"), at: paid.addingTimeInterval(5))
            try await system.drain()
            #expect(try await Self.balances(system, "user_dispute") == ["credits": 0, "gems": 0])
            for second in [10.0, 11] {
                try await system.stripe(
                    "charge.dispute.closed", StripeObjects.dispute("dp_1", charge: "ch_dispute", paymentIntent: "pi_dispute", status: "won"),
                    at: paid.addingTimeInterval(second))
            }
            try await system.drain()
            #expect(try await Self.balances(system, "user_dispute") == ["credits": 500, "gems": 2])
            let rows = try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).history(user: "user_dispute", limit: 10)
            #expect(rows.map(\.cause) == [.refundReversal, .refund, .purchase], "given back once")
        }
    }
}
