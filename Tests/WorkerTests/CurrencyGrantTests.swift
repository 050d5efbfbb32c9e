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

    /// `credits.500` paid on the web two minutes ago, as PaymentIntent `pi_<name>` (charge
    /// `ch_<name>`) of `user_<name>`, applied; returns when it was paid.
    static func packPaid(_ system: SystemHarness, _ name: String) async throws -> Date {
        let paid = Date().addingTimeInterval(-120).rounded
        try await system.stripe(
            "payment_intent.succeeded", StripeObjects.paymentIntent("pi_\(name)", user: "user_\(name)", product: "credits.500", charge: "ch_\(name)"),
            at: paid)
        try await system.drain()
        return paid
    }

    /// A monthly subscription (`<id>001`) bought forty days ago, and its renewal (`<id>002`) ten days
    /// ago, notified and applied; returns both transactions.
    static func twoPeriods(
        _ system: SystemHarness, _ id: String, user: String?, drain: Bool = true
    ) async throws -> (first: SampleAppleTransaction, renewal: SampleAppleTransaction) {
        let start = Date().addingTimeInterval(-40 * 86_400).rounded
        let first = subscription("\(id)001", user: user, purchased: start)
        try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: first, at: start)
        var renewal = subscription("\(id)002", user: user, purchased: start.addingTimeInterval(30 * 86_400))
        renewal.originalTransactionId = first.transactionId
        try await system.notify("DID_RENEW", transaction: renewal, at: start.addingTimeInterval(30 * 86_400))
        if drain { try await system.drain() }
        return (first, renewal)
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
            trial.offerDiscountType = "FREE_TRIAL"
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: trial, at: start)
            try await system.drain()
            #expect(try await Self.balances(system, user) == ["credits": 100], "the trial's amount")
            #expect(try await system.transactions(userID: user).first?["is_trial"] as? Bool == true, "FREE_TRIAL marks the row")

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

    /// A web checkout's free trial (Stripe: the session completed with nothing to pay, the card
    /// saved by its SetupIntent) grants the trial's amount once the card is saved; the first paid
    /// period after it grants the full amount.
    @Test func aStripeTrialGrantsItsAmountAndThePaidPeriodAfterItTheFull() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let user = "user_web_trial"
            let trialEnd = Date().addingTimeInterval(14 * 86_400).rounded
            let subscription = StripeObjects.subscription("sub_wt", status: "trialing", user: user, periodEnd: trialEnd, trialEnd: trialEnd)
            try await system.stripe("checkout.session.completed", StripeObjects.checkoutSession(
                "cs_wt", mode: "subscription", paymentStatus: "no_payment_required", subscription: subscription, user: user, setupIntent: "seti_wt"))
            try await system.drain()
            #expect(try await Self.balances(system, user) == [:], "nothing before the card is saved")
            try await system.stripe("setup_intent.succeeded", ["id": "seti_wt", "object": "setup_intent", "status": "succeeded", "customer": "cus_1"])
            try await system.drain()
            #expect(try await Self.balances(system, user) == ["credits": 100], "the trial's amount")
            #expect(try await system.transactions(userID: user).first?["is_trial"] as? Bool == true)

            try await system.stripe("invoice.paid", StripeObjects.invoice(
                "in_wt1", subscription: "sub_wt", reason: "subscription_cycle", periodEnd: trialEnd.addingTimeInterval(30 * 86_400)))
            try await system.drain()
            #expect(try await Self.balances(system, user) == ["credits": 1_100], "the first paid period's full amount")
            let rows = try await system.transactions(userID: user)
            let trialByRow = Dictionary(uniqueKeysWithValues: rows.map { ($0["provider_transaction_id"] as? String ?? "", $0["is_trial"] as? Bool) })
            #expect(trialByRow["in_wt1"] == false)
            #expect(rows.count == 2 && trialByRow.values.filter { $0 == true }.count == 1, "\(rows)")
        }
    }

    /// A web checkout's subscription paid at once: the subscription's own event applied first
    /// made the entitlement, and the checkout's payment is still its purchase, not a renewal.
    @Test func aCheckoutsFirstPaymentIsThePurchaseWhateverCameFirst() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let user = "user_checkout_first"
            let periodEnd = Date().addingTimeInterval(30 * 86_400).rounded
            let subscription = StripeObjects.subscription("sub_cf", user: user, periodEnd: periodEnd)
            try await system.stripe("customer.subscription.updated", subscription, at: Date().addingTimeInterval(-2))
            try await system.drain()
            var session = StripeObjects.checkoutSession("cs_cf", mode: "subscription", paymentStatus: "paid", subscription: subscription, user: user)
            session["invoice"] = "in_cf"
            try await system.stripe("checkout.session.completed", session, at: Date().addingTimeInterval(-1))
            try await system.drain()
            let rows = try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).history(user: user, limit: 10)
            #expect(rows.map(\.cause) == [.purchase], "\(rows)")
            #expect(try await Self.balances(system, user) == ["credits": 1_000])
        }
    }

    /// A renewal paid in full by a 100 % coupon (Stripe's invoice: `amount_paid` 0 of a `subtotal`
    /// of 999) is a paid period, not a free trial: it grants the product's full amounts, not the
    /// trial's, though it cost nothing.
    @Test func aPeriodPaidByACouponIsNoTrial() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let user = "user_coupon"
            let start = Date().addingTimeInterval(-40 * 86_400).rounded
            let firstEnd = start.addingTimeInterval(30 * 86_400)
            try await system.stripe("customer.subscription.updated", StripeObjects.subscription("sub_coupon", user: user, periodEnd: firstEnd), at: start)
            try await system.stripe(
                "invoice.paid", StripeObjects.invoice("in_coupon0", subscription: "sub_coupon", reason: "subscription_create", periodEnd: firstEnd),
                at: start.addingTimeInterval(1))
            try await system.drain()
            #expect(try await Self.balances(system, user) == ["credits": 1_000])

            var renewal = StripeObjects.invoice(
                "in_coupon1", subscription: "sub_coupon", reason: "subscription_cycle", periodEnd: firstEnd.addingTimeInterval(30 * 86_400), amount: 0)
            renewal["subtotal"] = 999
            renewal["total"] = 0
            renewal["total_discount_amounts"] = [["amount": 999, "discount": "di_100off"]]
            try await system.stripe("invoice.paid", renewal, at: firstEnd.addingTimeInterval(1))
            try await system.drain()
            let rows = try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).history(user: user, limit: 10)
            #expect(rows.map { $0.applied["credits"] } == [1_000, 1_000])
            #expect(rows.map(\.cause) == [.renewal, .purchase], "the first invoice is the purchase, though the subscription's event made the entitlement")
            #expect(try await Self.balances(system, user) == ["credits": 2_000], "the coupon's period grants 1,000, not the trial's 100")
            let paid = try await system.transactions(userID: user)
            #expect(paid.map { $0["is_trial"] as? Bool } == [false, false])
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
            let run = try await CommandLineTests.runSeparately(
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
            let (_, renewal) = try await Self.twoPeriods(system, "33", user: nil)
            let start = Date().addingTimeInterval(-40 * 86_400).rounded
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

    /// The same, with the notifications and the app's sync applied together (one batch at batch
    /// 16): the grant finds the periods saved earlier in the batch, without their writes sent.
    @Test func purchasesPaidBeforeTheirUserWasKnownAreGrantedInTheSameBatch() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let (_, renewal) = try await Self.twoPeriods(system, "35", user: nil, drain: false)
            try await system.sync(renewal, userID: "user_same_batch")
            try await system.drain()
            #expect(try await Self.balances(system, "user_same_batch") == ["credits": 2_000], "both periods, once")
            try await system.sync(renewal, userID: "user_next")
            try await system.drain()
            #expect(try await Self.balances(system, "user_next") == [:], "a transfer grants nothing again")
            #expect(try await system.db.scalar("SELECT count(*) FROM balance_transactions") == 2)
        }
    }

    /// A dispute takes the pack's grant back; the dispute won gives back what it took, once.
    @Test func aDisputeTakesTheGrantBackAndWinningItGivesItBack() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let paid = try await Self.packPaid(system, "dispute")
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

            // Refunded after the dispute was won: a second round, taken back again.
            try await system.stripe("charge.refunded", StripeObjects.charge("ch_dispute", paymentIntent: "pi_dispute"), at: paid.addingTimeInterval(20))
            try await system.drain()
            #expect(try await Self.balances(system, "user_dispute") == ["credits": 0, "gems": 0])
            let after = try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).history(user: "user_dispute", limit: 10)
            #expect(after.map(\.cause) == [.refund, .refundReversal, .refund, .purchase])
        }
    }

    /// Apple's REFUND, REFUND_REVERSED, REFUND, REFUND_REVERSED of one period, each sent twice:
    /// each round takes the grant back and gives it back once; the key of an earlier round does
    /// not stop the next (sluice_reverse_balance_change counts the rounds).
    @Test func aGrantTakenBackAndGivenBackTwiceMovesEachRound() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let user = UUID().uuidString.lowercased()
            let (_, renewal) = try await Self.twoPeriods(system, "36", user: user)
            #expect(try await Self.balances(system, user) == ["credits": 2_000])
            var refunded = renewal
            refunded.revocationReason = 0
            let tenDaysAgo = Date().addingTimeInterval(-10 * 86_400).rounded
            for round in 0..<2 {
                let at = tenDaysAgo.addingTimeInterval(Double(round) * 86_400 + 3_600)
                refunded.revocationDate = at.millisecondsSince1970
                try await system.notify("REFUND", transaction: refunded, at: at)
                try await system.notify("REFUND", transaction: refunded, at: at)
                try await system.drain(workers: 2)
                #expect(try await Self.balances(system, user) == ["credits": 1_000], "round \(round): taken back")
                try await system.notify("REFUND_REVERSED", transaction: renewal, at: at.addingTimeInterval(3_600))
                try await system.notify("REFUND_REVERSED", transaction: renewal, at: at.addingTimeInterval(3_600))
                try await system.drain(workers: 2)
                #expect(try await Self.balances(system, user) == ["credits": 2_000], "round \(round): given back")
            }
            let rows = try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).history(user: user, limit: 10)
            #expect(rows.map(\.cause) == [.refundReversal, .refund, .refundReversal, .refund, .renewal, .purchase])
        }
    }

    /// A renewal refunded while its subscription had no user, the user learned (the refunded
    /// period takes the user, nothing granted nor taken), then the refund reversed: the period is
    /// granted then, once, though nothing was taken to give back.
    @Test func aRefundReversedAfterTheUserWasLearnedGrantsThePeriod() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let (_, renewal) = try await Self.twoPeriods(system, "37", user: nil)
            var refunded = renewal
            refunded.revocationReason = 0
            let refundedAt = Date().addingTimeInterval(-5 * 86_400).rounded
            refunded.revocationDate = refundedAt.millisecondsSince1970
            try await system.notify("REFUND", transaction: refunded, at: refundedAt)
            try await system.drain()
            try await system.sync(refunded, userID: "user_reversed_late")
            try await system.drain()
            #expect(try await Self.balances(system, "user_reversed_late") == ["credits": 1_000], "the first period; the refunded one not")

            for _ in 0..<2 {
                try await system.notify("REFUND_REVERSED", transaction: renewal, at: Date().addingTimeInterval(60).rounded)
            }
            try await system.drain(workers: 2)
            #expect(try await Self.balances(system, "user_reversed_late") == ["credits": 2_000], "the reversed period granted, once")
            let rows = try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).history(user: "user_reversed_late", limit: 10)
            #expect(rows.map(\.cause) == [.renewal, .renewal], "two grants: nothing was taken, so nothing is given back")
        }
    }

    /// A period granted to one user and refunded, then passed to another (the app's sync under
    /// another account, TRANSFER_BEHAVIOR=transfer), then its refund reversed: the credits go
    /// back to the user they were taken from, and the new owner is granted nothing.
    @Test func aRefundReversedAfterATransferGivesBackOnce() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let (_, renewal) = try await Self.twoPeriods(system, "38", user: nil)
            try await system.sync(renewal, userID: "user_before_transfer")
            try await system.drain()
            #expect(try await Self.balances(system, "user_before_transfer") == ["credits": 2_000])
            var refunded = renewal
            refunded.revocationReason = 0
            refunded.revocationDate = Date().addingTimeInterval(30).rounded.millisecondsSince1970
            try await system.notify("REFUND", transaction: refunded, at: Date().addingTimeInterval(30).rounded)
            try await system.drain()
            #expect(try await Self.balances(system, "user_before_transfer") == ["credits": 1_000])
            refunded.signedDate = Date().addingTimeInterval(60).rounded.millisecondsSince1970
            try await system.sync(refunded, userID: "user_after_transfer")
            try await system.drain()
            #expect(try await system.db.scalar(
                "SELECT count(*) FROM transactions WHERE provider_transaction_id = '38002' AND user_id = 'user_after_transfer'") == 1,
                "the period passed to the new owner")

            try await system.notify("REFUND_REVERSED", transaction: renewal, at: Date().addingTimeInterval(120).rounded)
            try await system.drain()
            #expect(try await Self.balances(system, "user_before_transfer") == ["credits": 2_000], "given back to whom it was taken from")
            #expect(try await Self.balances(system, "user_after_transfer") == [:], "the grant is not made again")
        }
    }

    /// Two refunds in part of one payment, then the rest (Stripe's `charge.refunded`, `refunded`
    /// false until the whole is): each takes back its share of the grant once, rounded up, and the
    /// whole refund only what the parts did not.
    @Test func refundsInPartTakeBackEachShareOnce() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let paid = try await Self.packPaid(system, "parts")
            let first = StripeObjects.charge("ch_parts", paymentIntent: "pi_parts", refunded: false, amountRefunded: 1_000)
            try await system.stripe("charge.refunded", first, at: paid.addingTimeInterval(5), id: "evt_part_1")
            try await system.stripe("charge.refunded", first, at: paid.addingTimeInterval(5), id: "evt_part_1")
            try await system.drain(workers: 2)
            // 1,000 of 4,999 refunded: 100.02 credits and 0.4 gems, each rounded up.
            #expect(try await Self.balances(system, "user_parts") == ["credits": 399, "gems": 1])

            let second = StripeObjects.charge("ch_parts", paymentIntent: "pi_parts", refunded: false, amountRefunded: 2_500)
            try await system.stripe("charge.refunded", second, at: paid.addingTimeInterval(10))
            try await system.drain()
            // 2,500 of 4,999 in all: 251 credits and 2 gems, of which 101 and 1 were taken already.
            #expect(try await Self.balances(system, "user_parts") == ["credits": 249, "gems": 0])

            try await system.stripe("charge.refunded", StripeObjects.charge("ch_parts", paymentIntent: "pi_parts"), at: paid.addingTimeInterval(15))
            try await system.drain()
            #expect(try await Self.balances(system, "user_parts") == ["credits": 0, "gems": 0])
            let rows = try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).history(user: "user_parts", limit: 10)
            #expect(rows.map(\.cause) == [.refund, .refund, .refund, .purchase])
            #expect(rows.map(\.applied) == [["credits": -249], ["credits": -150, "gems": -1], ["credits": -101, "gems": -1], ["credits": 500, "gems": 2]])
            #expect(rows.allSatisfy { $0.shortfall == nil }, "nothing was spent: every share was there to take")
        }
    }

    /// A subscription whose periods' grants expire (`--currency-grants-expire true`): a spend
    /// takes from the period that ends first; at its end the rest of its grant expires and the
    /// next period's stays; a refund of the ended period then takes back only what was spent of it.
    @Test func aPeriodsGrantExpiresAtItsEndAndSpendsUseItFirst() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let catalog = CatalogStore(client: system.db.client, logger: TestDatabase.logger)
            _ = try await catalog.update("pro.monthly", CatalogStore.Changes(currencyGrantsExpire: true))
            let user = UUID().uuidString.lowercased()
            let (first, renewal) = try await Self.twoPeriods(system, "34", user: user)
            #expect(try await Self.balances(system, user) == ["credits": 2_000])
            let store = BalanceStore(client: system.db.client, logger: TestDatabase.logger)
            let granted = try await store.history(user: user, limit: 10)
            #expect(granted.map(\.expiresAt) == [renewal.expiresDate, first.expiresDate].map { $0.map { Date(timeIntervalSince1970: Double($0) / 1_000) } })
            _ = try await store.adjust(user: user, try BalanceAdjustments(["credits": -300]), cause: .api, key: "spend-1", digest: nil)

            let expiry = BalanceExpiryService(
                store: store, lease: MaintenanceLease(client: system.db.client, task: "balance-expiry", owner: "test", logger: TestDatabase.logger),
                interval: .seconds(60), logger: TestDatabase.logger)
            #expect(try await expiry.runOnce() == 1, "the first period ended ten days ago")
            #expect(try await Self.balances(system, user) == ["credits": 1_000], "700 of it were left to expire; the renewal's stay")
            #expect(try await expiry.runOnce() == 0, "expired once")
            let expired = try #require(try await store.history(user: user, limit: 1).first)
            #expect(expired.cause == .expiry && expired.applied == ["credits": -700] && expired.shortfall == nil)

            var refunded = first
            refunded.revocationDate = Date().millisecondsSince1970
            refunded.revocationReason = 0
            try await system.notify("REFUND", transaction: refunded, at: Date().rounded)
            try await system.drain()
            // 1,000 refunded, 700 of which expired already: the 300 spent of it are taken back.
            #expect(try await Self.balances(system, user) == ["credits": 700])
            #expect(try await store.history(user: user, limit: 1).first?.applied == ["credits": -300])
            _ = try await system.announceBalances()
            let causes = try await system.db.client.query(
                "SELECT convert_from(payload, 'UTF8') FROM outgoing_events WHERE type = 'balance.changed' AND user_id = \(user) ORDER BY sequence",
                logger: TestDatabase.logger)
            var origins: [String] = []
            for try await body in causes.decode(String.self) {
                let json = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
                origins.append(((json?["cause"] as? [String: Any])?["origin"] as? String) ?? "?")
            }
            #expect(origins == ["webhook", "webhook", "api", "clock", "webhook"])
        }
    }

    /// A refund in part, then a dispute of the rest, won: the dispute's take-back is given back,
    /// the refund in part stands.
    @Test func aRefundInPartStandsThroughADisputeWon() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let paid = try await Self.packPaid(system, "stands")
            try await system.stripe(
                "charge.refunded", StripeObjects.charge("ch_stands", paymentIntent: "pi_stands", refunded: false, amountRefunded: 1_000),
                at: paid.addingTimeInterval(5))
            try await system.drain()
            try await system.stripe(
                "charge.dispute.created", StripeObjects.dispute("dp_stands", charge: "ch_stands", paymentIntent: "pi_stands"),
                at: paid.addingTimeInterval(10))
            try await system.drain()
            #expect(try await Self.balances(system, "user_stands") == ["credits": 0, "gems": 0])
            try await system.stripe(
                "charge.dispute.closed", StripeObjects.dispute("dp_stands", charge: "ch_stands", paymentIntent: "pi_stands", status: "won"),
                at: paid.addingTimeInterval(15))
            try await system.drain()
            #expect(try await Self.balances(system, "user_stands") == ["credits": 399, "gems": 1], "500 and 2, less the refund in part")
            let rows = try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).history(user: "user_stands", limit: 10)
            #expect(rows.map(\.cause) == [.refundReversal, .refund, .refund, .purchase])
        }
    }

    /// The expiry sweep never waits for a user's lock: a user whose balance another transaction
    /// is changing is left for the next pass, which takes the grant once.
    @Test func theExpirySweepSkipsAUserBeingChangedAndTakesItNextPass() async throws {
        try await SystemHarness.run { system in
            let store = BalanceStore(client: system.db.client, logger: TestDatabase.logger)
            try await system.db.client.query(
                """
                SELECT sluice_adjust_balances('user_busy', '{"credits": 10}', 'renewal', 'grant:busy', NULL, false, NULL, NULL, NULL,
                    now() - interval '1 day')
                """, logger: TestDatabase.logger)
            try await system.db.client.withTransaction(logger: TestDatabase.logger) { connection in
                try await connection.query(
                    "SELECT pg_advisory_xact_lock(sluice_balance_lock('user_busy'))", logger: TestDatabase.logger)
                #expect(try await store.expireDue(limit: 10) == 0, "the user's lock is held: skipped, not waited for")
            }
            #expect(try await store.expireDue(limit: 10) == 1)
            #expect(try await Self.balances(system, "user_busy") == ["credits": 0])
            #expect(try await store.expireDue(limit: 10) == 0)
        }
    }

    /// The largest grant (10^12, `BalanceAdjustments.largestAmount`) taken back in part of a
    /// payment of 10^8 minor units: the share is computed without overflowing bigint (which
    /// failed the whole batch, retried forever), rounded up.
    /// Three packs bought in one App Store transaction (`quantity` 3, one price for all): three
    /// grants' worth, once; Apple's prorated refund of one takes back a third. Before, the
    /// buyer paid for three and got one, and the refund of one took all of it.
    @Test func threePacksBoughtAtOnceGrantThreeAndTheRefundOfOneTakesAThird() async throws {
        try await SystemHarness.run { system in
            try await Self.addCatalog(system)
            let user = UUID().uuidString.lowercased()
            let bought = Date().addingTimeInterval(-3_600).rounded
            var packs = SampleAppleTransaction(
                transactionId: "41001", productId: "credits.500", type: "Consumable", purchaseDate: bought, appAccountToken: user)
            packs.quantity = 3
            packs.price = 8_970
            try await system.notify("ONE_TIME_CHARGE", transaction: packs, at: bought)
            try await system.notify("ONE_TIME_CHARGE", transaction: packs, at: bought.addingTimeInterval(1))
            try await system.drain(workers: 2)
            #expect(try await Self.balances(system, user) == ["credits": 1_500, "gems": 6], "three packs' worth, once")

            var refunded = packs
            refunded.revocationDate = bought.addingTimeInterval(600).millisecondsSince1970
            refunded.revocationReason = 0
            refunded.revocationType = "REFUND_PRORATED"
            refunded.revocationPercentage = 33_333
            try await system.notify("REFUND", transaction: refunded, at: bought.addingTimeInterval(600))
            try await system.drain()
            // 33.333 % of $8.97 is 299 cents; 299/897 of 1,500 credits and of 6 gems is a third.
            #expect(try await Self.balances(system, user) == ["credits": 1_000, "gems": 4])
        }
    }

    @Test func aHugeGrantsShareIsTakenBackWithoutOverflow() async throws {
        try await SystemHarness.run { system in
            for call in [
                "SELECT sluice_adjust_balances('user_big', '{\"credits\": 1000000000000}', 'purchase', 'grant:transaction:big', NULL, false, NULL, NULL, NULL)",
                "SELECT sluice_reverse_balance_change('grant:transaction:big', 33333333, 100000000, 'refund', 'take_back:transaction:big', true, NULL)",
            ] {
                try await system.db.client.query(PostgresQuery(unsafeSQL: call), logger: TestDatabase.logger)
            }
            // 10^12 × 0.33333333 = 333,333,330,000 exactly; nothing to round.
            #expect(try await Self.balances(system, "user_big") == ["credits": 666_666_670_000])
        }
    }

    /// A pack's grant (never expires) taken back while a period's grant that expires is
    /// unspent: the take-back comes out of the credits that never expire, and the period's lot
    /// keeps all it holds, so that it all expires at its end (taken from the lot, 500 of the
    /// period's credits would have outlived it).
    @Test func aTakeBackOfAGrantThatNeverExpiresLeavesTheExpiringCredits() async throws {
        try await SystemHarness.run { system in
            for call in [
                "SELECT sluice_adjust_balances('user_lots', '{\"credits\": 500}', 'purchase', 'grant:transaction:pack', NULL, false, NULL, NULL, NULL)",
                """
                SELECT sluice_adjust_balances('user_lots', '{"credits": 1000}', 'renewal', 'grant:transaction:may', NULL, false, NULL, NULL, NULL,
                    now() + interval '20 days')
                """,
                "SELECT sluice_reverse_balance_change('grant:transaction:pack', 1, 1, 'refund', 'take_back:transaction:pack', true, NULL)",
            ] {
                try await system.db.client.query(PostgresQuery(unsafeSQL: call), logger: TestDatabase.logger)
            }
            #expect(try await Self.balances(system, "user_lots") == ["credits": 1_000])
            #expect(try await system.db.scalar("SELECT sum(remaining)::bigint FROM balance_lots WHERE user_id = 'user_lots'") == 1_000)
            // A spend still takes from what expires first.
            try await system.db.client.query(
                "SELECT sluice_adjust_balances('user_lots', '{\"credits\": -100}', 'api', 'spend-1', NULL, false, NULL, NULL, NULL)",
                logger: TestDatabase.logger)
            #expect(try await system.db.scalar("SELECT sum(remaining)::bigint FROM balance_lots WHERE user_id = 'user_lots'") == 900)
        }
    }

    /// A give-back as a worker of the release before sends it, naming the take-back rather than
    /// the grant (during a rolling deploy): it still finds the grant and gives back once.
    @Test func aGiveBackNamingItsTakeBackStillFindsTheGrant() async throws {
        try await SystemHarness.run { system in
            for call in [
                "SELECT sluice_adjust_balances('user_old', '{\"credits\": 50}', 'purchase', 'grant:transaction:x', NULL, false, NULL, NULL, NULL)",
                "SELECT sluice_reverse_balance_change('grant:transaction:x', 1, 1, 'refund', 'take_back:transaction:x', true, NULL)",
                "SELECT sluice_reverse_balance_change('take_back:transaction:x', 1, 1, 'refund_reversal', 'give_back:transaction:x', false, NULL)",
            ] {
                try await system.db.client.query(PostgresQuery(unsafeSQL: call), logger: TestDatabase.logger)
            }
            #expect(try await Self.balances(system, "user_old") == ["credits": 50])
            #expect(try await system.db.scalar("SELECT count(*) FROM balance_transactions WHERE cause = 'refund_reversal'") == 1)
        }
    }
}
