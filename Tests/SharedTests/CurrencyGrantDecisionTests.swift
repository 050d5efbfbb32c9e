// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing
import TestSupport

/// What a ledger row's change does to its buyer's balances, as a table (docs/credits.md).
struct CurrencyGrantDecisionTests {
    static let pack = CatalogProduct(id: "credits.500", type: .consumable, currencyGrants: ["credits": 500])
    static let monthly = CatalogProduct(
        id: "pro.monthly", type: .autoRenewable, currencyGrants: ["credits": 1_000], trialCurrencyGrants: ["credits": 100])
    static let plain = CatalogProduct(id: "pro.lifetime", type: .nonConsumable)
    static let expiringMonthly = CatalogProduct(id: "pro.monthly", type: .autoRenewable, currencyGrants: ["credits": 1_000], currencyGrantsExpire: true)
    static let expiringPack = CatalogProduct(id: "credits.500", type: .consumable, currencyGrants: ["credits": 500], currencyGrantsExpire: true)
    static let periodEnd = Date(timeIntervalSince1970: 1_800_000_000)

    static func tx(
        _ status: TransactionStatus?, user: String? = "u", amount: Int64? = 999, refunded: Int64? = nil, quantity: Int? = nil,
        quantityRefunded: Int? = nil, trial: Bool = false
    ) -> TransactionState? {
        guard let status else { return nil }
        var state = TransactionState(source: .storeKit, providerTransactionID: "2000", environment: .production, status: status)
        state.entitlementKey = "apple:production:1"
        state.userID = user
        state.amount = amount
        state.amountRefunded = refunded
        state.quantity = quantity
        state.quantityRefunded = quantityRefunded
        state.isTrial = trial
        return state
    }

    static let keys = CurrencyGrantDecision.keys(of: tx(.succeeded)!)

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var before: TransactionState?
        var after: TransactionState
        var product: CatalogProduct?
        var firstPeriod = true
        var periodEnd: Date?
        var expected: [CurrencyGrantDecision.Change]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "a pack bought", before: nil, after: tx(.succeeded)!, product: pack,
            expected: [.grant(user: "u", amounts: ["credits": 500], cause: .purchase, key: keys.grant)]),
        Row(name: "a pending payment succeeding", before: tx(.pending), after: tx(.succeeded)!, product: pack,
            expected: [.grant(user: "u", amounts: ["credits": 500], cause: .purchase, key: keys.grant)]),
        Row(name: "paid again (a duplicate)", before: tx(.succeeded), after: tx(.succeeded)!, product: pack, expected: []),
        Row(name: "no user yet", before: nil, after: tx(.succeeded, user: nil)!, product: pack, expected: []),
        Row(name: "a product granting nothing", before: nil, after: tx(.succeeded)!, product: plain, expected: []),
        Row(name: "not in the catalog", before: nil, after: tx(.succeeded)!, product: nil, expected: []),
        Row(name: "a subscription's first period", before: nil, after: tx(.succeeded)!, product: monthly,
            expected: [.grant(user: "u", amounts: ["credits": 1_000], cause: .purchase, key: keys.grant)]),
        Row(name: "a renewal", before: nil, after: tx(.succeeded)!, product: monthly, firstPeriod: false,
            expected: [.grant(user: "u", amounts: ["credits": 1_000], cause: .renewal, key: keys.grant)]),
        Row(name: "a free trial's period", before: nil, after: tx(.succeeded, amount: 0, trial: true)!, product: monthly,
            expected: [.grant(user: "u", amounts: ["credits": 100], cause: .purchase, key: keys.grant)]),
        Row(name: "a free trial's period, renewed into (a free promotional offer)", before: nil,
            after: tx(.succeeded, amount: 0, trial: true)!, product: monthly, firstPeriod: false,
            expected: [.grant(user: "u", amounts: ["credits": 100], cause: .renewal, key: keys.grant)]),
        Row(name: "a period paid by a 100 % coupon is no trial", before: nil, after: tx(.succeeded, amount: 0)!, product: monthly,
            firstPeriod: false, expected: [.grant(user: "u", amounts: ["credits": 1_000], cause: .renewal, key: keys.grant)]),
        Row(name: "a free pack is no trial", before: nil, after: tx(.succeeded, amount: 0)!, product: pack,
            expected: [.grant(user: "u", amounts: ["credits": 500], cause: .purchase, key: keys.grant)]),
        Row(name: "a pack is never a trial, whatever its row says", before: nil, after: tx(.succeeded, amount: 0, trial: true)!, product: pack,
            expected: [.grant(user: "u", amounts: ["credits": 500], cause: .purchase, key: keys.grant)]),
        Row(name: "a refunded pack", before: tx(.succeeded), after: tx(.refunded, refunded: 999)!, product: pack,
            expected: [.takeBack(grantKey: keys.grant, numerator: 1, denominator: 1, key: keys.takeBack)]),
        Row(name: "a pack refunded in part is taken back whole", before: tx(.succeeded), after: tx(.refunded, refunded: 300)!, product: pack,
            expected: [.takeBack(grantKey: keys.grant, numerator: 1, denominator: 1, key: keys.takeBack)]),
        Row(name: "a period refunded in part", before: tx(.succeeded), after: tx(.refunded, refunded: 333)!, product: monthly,
            expected: [.takeBack(grantKey: keys.grant, numerator: 333, denominator: 999, key: keys.takeBack)]),
        Row(name: "a period refunded whole", before: tx(.succeeded), after: tx(.refunded, refunded: 999)!, product: monthly,
            expected: [.takeBack(grantKey: keys.grant, numerator: 1, denominator: 1, key: keys.takeBack)]),
        Row(name: "a period refunded so little it came to no minor unit", before: tx(.succeeded), after: tx(.refunded, refunded: 0)!,
            product: monthly, expected: []),
        Row(name: "a dispute", before: tx(.succeeded), after: tx(.disputed)!, product: monthly,
            expected: [.takeBack(grantKey: keys.grant, numerator: 1, denominator: 1, key: keys.takeBack)]),
        Row(name: "refunded before it was seen paid", before: nil, after: tx(.refunded, refunded: 999)!, product: pack, expected: []),
        Row(name: "refunded again", before: tx(.refunded, refunded: 999), after: tx(.refunded, refunded: 999)!, product: pack, expected: []),
        // A reversal names the grant first, under its key: a no-op when it was made, made now when
        // it never was (refunded before its user was known, linked while refunded).
        Row(name: "a refund reversed", before: tx(.refunded, refunded: 999), after: tx(.succeeded)!, product: pack,
            expected: [.grant(user: "u", amounts: ["credits": 500], cause: .purchase, key: keys.grant),
                       .giveBack(grantKey: keys.grant, key: keys.giveBack)]),
        Row(name: "a dispute won", before: tx(.disputed), after: tx(.succeeded)!, product: monthly, firstPeriod: false,
            expected: [.grant(user: "u", amounts: ["credits": 1_000], cause: .renewal, key: keys.grant),
                       .giveBack(grantKey: keys.grant, key: keys.giveBack)]),
        Row(name: "a dispute won after a refund in part", before: tx(.disputed, refunded: 300), after: tx(.succeeded, refunded: 300)!, product: pack,
            expected: [.grant(user: "u", amounts: ["credits": 500], cause: .purchase, key: keys.grant),
                       .giveBack(grantKey: keys.grant, key: keys.giveBack),
                       .takeBack(grantKey: keys.grant, numerator: 300, denominator: 999, key: keys.takeBack + "#300")]),
        Row(name: "a refund reversed with still no user", before: tx(.refunded, user: nil, refunded: 999), after: tx(.succeeded, user: nil)!,
            product: pack, expected: [.giveBack(grantKey: keys.grant, key: keys.giveBack)]),
        Row(name: "a failed payment", before: tx(.pending), after: tx(.failed)!, product: pack, expected: []),
        Row(name: "paid before its user was known", before: tx(.succeeded, user: nil), after: tx(.succeeded)!, product: pack,
            expected: [.grant(user: "u", amounts: ["credits": 500], cause: .purchase, key: keys.grant)]),
        Row(name: "a refund reversed, its user known only now", before: tx(.refunded, user: nil, refunded: 999), after: tx(.succeeded)!,
            product: pack, expected: [.grant(user: "u", amounts: ["credits": 500], cause: .purchase, key: keys.grant)]),
        Row(name: "its user changed (a transfer)", before: tx(.succeeded, user: "v"), after: tx(.succeeded)!, product: pack, expected: []),
        // A refund in part while the payment stands (Stripe's charge.refunded with refunded false):
        // the share refunded so far, under a key of that amount; the function asks only the rest.
        Row(name: "refunded in part", before: tx(.succeeded), after: tx(.succeeded, refunded: 300)!, product: pack,
            expected: [.takeBack(grantKey: keys.grant, numerator: 300, denominator: 999, key: keys.takeBack + "#300")]),
        Row(name: "refunded in part again", before: tx(.succeeded, refunded: 300), after: tx(.succeeded, refunded: 600)!, product: pack,
            expected: [.takeBack(grantKey: keys.grant, numerator: 600, denominator: 999, key: keys.takeBack + "#600")]),
        Row(name: "the same partial refund again", before: tx(.succeeded, refunded: 600), after: tx(.succeeded, refunded: 600)!, product: pack,
            expected: []),
        Row(name: "refunded whole after a part", before: tx(.succeeded, refunded: 600), after: tx(.refunded, refunded: 999)!, product: monthly,
            expected: [.takeBack(grantKey: keys.grant, numerator: 1, denominator: 1, key: keys.takeBack)]),
        Row(name: "first seen refunded in part", before: nil, after: tx(.succeeded, refunded: 333)!, product: pack,
            expected: [.grant(user: "u", amounts: ["credits": 500], cause: .purchase, key: keys.grant),
                       .takeBack(grantKey: keys.grant, numerator: 333, denominator: 999, key: keys.takeBack + "#333")]),
        Row(name: "a refund in part of no amount", before: tx(.succeeded), after: tx(.succeeded, amount: nil, refunded: 300)!, product: pack,
            expected: []),
        // Grants that expire at the end of their period: a subscription's, when its product says so.
        Row(name: "a period whose grant expires", before: nil, after: tx(.succeeded)!, product: expiringMonthly, firstPeriod: false,
            periodEnd: periodEnd,
            expected: [.grant(user: "u", amounts: ["credits": 1_000], cause: .renewal, key: keys.grant, expiresAt: periodEnd)]),
        Row(name: "a period whose grant does not expire", before: nil, after: tx(.succeeded)!, product: monthly, periodEnd: periodEnd,
            expected: [.grant(user: "u", amounts: ["credits": 1_000], cause: .purchase, key: keys.grant)]),
        Row(name: "a one-time purchase's grant never expires", before: nil, after: tx(.succeeded)!, product: expiringPack, periodEnd: periodEnd,
            expected: [.grant(user: "u", amounts: ["credits": 500], cause: .purchase, key: keys.grant)]),
        // Several of a product bought at once (Apple's and Google Play's `quantity`).
        Row(name: "three packs bought at once", before: nil, after: tx(.succeeded, amount: 2_997, quantity: 3)!, product: pack,
            expected: [.grant(user: "u", amounts: ["credits": 1_500], cause: .purchase, key: keys.grant)]),
        Row(name: "one of three packs refunded (Apple's REFUND_PRORATED)", before: tx(.succeeded, amount: 2_997, quantity: 3),
            after: tx(.refunded, amount: 2_997, refunded: 999, quantity: 3)!, product: pack,
            expected: [.takeBack(grantKey: keys.grant, numerator: 999, denominator: 2_997, key: keys.takeBack)]),
        Row(name: "all three refunded", before: tx(.succeeded, amount: 2_997, quantity: 3),
            after: tx(.refunded, amount: 2_997, refunded: 2_997, quantity: 3)!, product: pack,
            expected: [.takeBack(grantKey: keys.grant, numerator: 1, denominator: 1, key: keys.takeBack)]),
        // Google Play's quantity-based refund of some of a purchase of several, which names no price.
        Row(name: "one of three packs refunded (Google's quantity-based refund)", before: tx(.succeeded, amount: nil, quantity: 3),
            after: tx(.succeeded, amount: nil, quantity: 3, quantityRefunded: 1)!, product: pack,
            expected: [.takeBack(grantKey: keys.grant, numerator: 1, denominator: 3, key: keys.takeBack + "#q1")]),
        Row(name: "a second of three refunded takes what the first did not", before: tx(.succeeded, amount: nil, quantity: 3, quantityRefunded: 1),
            after: tx(.succeeded, amount: nil, quantity: 3, quantityRefunded: 2)!, product: pack,
            expected: [.takeBack(grantKey: keys.grant, numerator: 2, denominator: 3, key: keys.takeBack + "#q2")]),
        // The same when the purchase's price is known (Play's Orders API answered): units, not money.
        Row(name: "one of three priced packs refunded by quantity", before: tx(.succeeded, amount: 297, quantity: 3),
            after: tx(.succeeded, amount: 297, quantity: 3, quantityRefunded: 1)!, product: pack,
            expected: [.takeBack(grantKey: keys.grant, numerator: 1, denominator: 3, key: keys.takeBack + "#q1")]),
        Row(name: "a priced pack's second unit refunded by quantity", before: tx(.succeeded, amount: 297, quantity: 3, quantityRefunded: 1),
            after: tx(.succeeded, amount: 297, quantity: 3, quantityRefunded: 2)!, product: pack,
            expected: [.takeBack(grantKey: keys.grant, numerator: 2, denominator: 3, key: keys.takeBack + "#q2")]),
        Row(name: "the same quantity refunded again takes nothing", before: tx(.succeeded, amount: nil, quantity: 3, quantityRefunded: 2),
            after: tx(.succeeded, amount: nil, quantity: 3, quantityRefunded: 2)!, product: pack, expected: []),
        Row(name: "three bought, one already refunded when first seen", before: nil,
            after: tx(.succeeded, amount: nil, quantity: 3, quantityRefunded: 1)!, product: pack,
            expected: [.grant(user: "u", amounts: ["credits": 1_500], cause: .purchase, key: keys.grant),
                       .takeBack(grantKey: keys.grant, numerator: 1, denominator: 3, key: keys.takeBack + "#q1")]),
        Row(name: "the rest voided after one was refunded", before: tx(.succeeded, amount: nil, quantity: 3, quantityRefunded: 1),
            after: tx(.refunded, amount: nil, quantity: 3, quantityRefunded: 1)!, product: pack,
            expected: [.takeBack(grantKey: keys.grant, numerator: 1, denominator: 1, key: keys.takeBack)]),
        Row(name: "so many that the grant would pass the largest amount", before: nil, after: tx(.succeeded, quantity: Int.max)!, product: pack,
            expected: [.grant(user: "u", amounts: ["credits": BalanceAdjustments.largestAmount], cause: .purchase, key: keys.grant)]),
    ]

    @Test(arguments: rows)
    func theChangeIs(_ row: Row) {
        #expect(CurrencyGrantDecision.changes(
            before: row.before, after: row.after, product: row.product, firstPeriod: row.firstPeriod, periodEnd: row.periodEnd) == row.expected)
    }

    /// Every key the decision makes, and an expiry's (sluice_expire_balance_lots prefixes the
    /// grant's key with `expiry:`), is one the API and operators may not use.
    @Test func everyKeyOfSluicesOwnIsReserved() throws {
        for key in [Self.keys.grant, Self.keys.takeBack, Self.keys.giveBack, CurrencyGrantDecision.partialTakeBackKey(Self.keys.takeBack, refunded: .init(measure: .money, numerator: 3, denominator: 10))] {
            #expect(CurrencyGrantDecision.isReserved(key), "\(key)")
        }
        let expiry = try String(contentsOf: TestDatabase.migrationsDirectory.appendingPathComponent("functions/sluice_expire_balance_lots.sql"), encoding: .utf8)
        #expect(expiry.contains("'expiry:' || COALESCE(due.idempotency_key"))
        #expect(CurrencyGrantDecision.isReserved("expiry:" + Self.keys.grant))
        #expect(!CurrencyGrantDecision.isReserved("spend-7") && !CurrencyGrantDecision.isReserved("grants:1"))
    }

    @Test func theKeysNameTheProvidersTransaction() {
        #expect(Self.keys.grant == "grant:transaction:store_kit:production:2000")
        #expect(Self.keys.takeBack == "take_back:transaction:store_kit:production:2000")
        #expect(Self.keys.giveBack == "give_back:transaction:store_kit:production:2000")
    }

    /// What the worker holds for `sluice_write_applied_batch`: each change, in order, a grant as
    /// the deposit function's row (DepositBalancesTests runs it through the function).
    @Test func theChangesAreHeldAsTheFunctionReadsThem() {
        #expect(CurrencyGrantDecision.argument([], causeEventID: 7) == nil)
        let text = CurrencyGrantDecision.argument([
            .grant(user: "u", amounts: ["gems": 2, "credits": 500], cause: .renewal, key: "grant:k"),
            .grant(user: "u", amounts: ["credits": 1], cause: .renewal, key: "grant:e", expiresAt: Date(timeIntervalSince1970: 946_684_801)),
            .takeBack(grantKey: "grant:k", numerator: 1, denominator: 3, key: "take_back:k"), .giveBack(grantKey: "grant:k", key: "give_back:k"),
        ], causeEventID: 7)
        #expect(text == #"[{"kind":"grant","user_id":"u","adjustments":{"credits":500,"gems":2},"cause":"renewal","idempotency_key":"grant:k","cause_event_id":7},"#
            + #"{"kind":"grant","user_id":"u","adjustments":{"credits":1},"cause":"renewal","idempotency_key":"grant:e","cause_event_id":7,"expires_at_us":1000000},"#
            + #"{"kind":"take_back","of":"grant:k","numerator":1,"denominator":3,"key":"take_back:k","cause_event_id":7},"#
            + #"{"kind":"give_back","of":"grant:k","key":"give_back:k","cause_event_id":7}]"#)
    }

    @Test func aPaidTransactionLinkedLateIsGrantedToTheUser() {
        #expect(CurrencyGrantDecision.grantOnLinking(Self.tx(.succeeded, user: nil)!, user: "late", product: Self.monthly)
            == [.grant(user: "late", amounts: ["credits": 1_000], cause: .renewal, key: Self.keys.grant)])
        #expect(CurrencyGrantDecision.grantOnLinking(Self.tx(.refunded, user: nil)!, user: "late", product: Self.pack).isEmpty)
        #expect(CurrencyGrantDecision.grantOnLinking(Self.tx(.succeeded, user: "u")!, user: "late", product: Self.pack).isEmpty)
        #expect(CurrencyGrantDecision.grantOnLinking(Self.tx(.succeeded, user: nil)!, user: "late", product: nil).isEmpty)
        // Refunded in part before its user was known: granted, and the share taken back.
        #expect(CurrencyGrantDecision.grantOnLinking(Self.tx(.succeeded, user: nil, refunded: 333)!, user: "late", product: Self.pack) == [
            .grant(user: "late", amounts: ["credits": 500], cause: .purchase, key: Self.keys.grant),
            .takeBack(grantKey: Self.keys.grant, numerator: 333, denominator: 999, key: Self.keys.takeBack + "#333"),
        ])
        // An expiring period with no end of its own ends with its entitlement.
        #expect(CurrencyGrantDecision.grantOnLinking(Self.tx(.succeeded, user: nil)!, user: "late", product: Self.expiringMonthly, periodEnd: Self.periodEnd)
            == [.grant(user: "late", amounts: ["credits": 1_000], cause: .renewal, key: Self.keys.grant, expiresAt: Self.periodEnd)])
    }

    /// The ledger key prefixes the SQL functions name (a grant found by its key, a take-back's
    /// key turned into its grant's, an expiry's key) are the ones this type reserves.
    @Test func theKeyPrefixesTheSQLFunctionsNameAreTheReservedOnes() throws {
        let functions = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("sql/functions")
        var named: Set<String> = []
        for file in try FileManager.default.contentsOfDirectory(atPath: functions.path) where file.hasSuffix(".sql") {
            let text = try String(contentsOf: functions.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: /'([a-z_]+:)['%]/) where !match.1.hasPrefix("sluice_") { named.insert(String(match.1)) }
        }
        #expect(named == ["grant:", "take_back:", "expiry:"])
        #expect(named.isSubset(of: CurrencyGrantDecision.reservedKeyPrefixes))
    }
}
