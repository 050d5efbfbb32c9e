// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import NIOCore
import NIOFoundationCompat
import Shared
import Testing
import TestSupport

@testable import Worker

/// ``PlayDecider`` as a table: each fetched state against what it leaves, without a database.
struct PlayDeciderTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A stored subscription state, fetched with `order` (an Orders API answer) when given.
    static func event(_ purchase: [String: any Sendable], cause: Int = 2, at time: Date = now, order: [String: any Sendable]? = nil) throws -> PlayDecider.Event {
        let record = PlayPurchaseRecord(
            cause: PlayNotificationType.subscription(cause).rawValue, fetchedAt: time, kind: .subscription, packageName: "com.example.sluice",
            productID: nil, purchaseToken: "tok", purchase: ByteBuffer(data: try JSONSerialization.data(withJSONObject: purchase)),
            order: try order.map { ByteBuffer(data: try JSONSerialization.data(withJSONObject: $0)) })
        let (decoded, subscription, _, fetched) = try PlayPurchaseRecord.decode(record.encoded())
        return PlayDecider.Event(eventID: 1, time: time, record: decoded, subscription: subscription, product: nil, order: fetched)
    }

    /// A stored one-time purchase's state, fetched with `order` when given.
    static func productEvent(_ purchase: [String: any Sendable], order: [String: any Sendable]? = nil) throws -> PlayDecider.Event {
        let record = PlayPurchaseRecord(
            cause: "ONE_TIME_PRODUCT_PURCHASED", fetchedAt: now, kind: .product, packageName: "p", productID: purchase["productId"] as? String,
            purchaseToken: "tok", purchase: ByteBuffer(data: try JSONSerialization.data(withJSONObject: purchase)),
            order: try order.map { ByteBuffer(data: try JSONSerialization.data(withJSONObject: $0)) })
        let (decoded, _, product, fetched) = try PlayPurchaseRecord.decode(record.encoded())
        return PlayDecider.Event(eventID: 1, time: now, record: decoded, product: product, order: fetched)
    }

    static func state(_ entitlement: EntitlementState? = nil, replacedBy: String? = nil) -> PlayDecider.State {
        PlayDecider.State(entityKey: "play:tok", entitlement: entitlement, transaction: nil, userID: "user-1", replacedBy: replacedBy)
    }

    @Test(arguments: [
        ("SUBSCRIPTION_STATE_ACTIVE", 2, "active"),
        ("SUBSCRIPTION_STATE_CANCELED", 3, "cancelled"),
        ("SUBSCRIPTION_STATE_IN_GRACE_PERIOD", 6, "grace_period"),
        ("SUBSCRIPTION_STATE_ON_HOLD", 5, "past_due"),
        ("SUBSCRIPTION_STATE_PAUSED", 10, "paused"),
        ("SUBSCRIPTION_STATE_EXPIRED", 13, "expired"),
        ("SUBSCRIPTION_STATE_EXPIRED", 12, "revoked"),
        ("SUBSCRIPTION_STATE_PENDING", 4, "recorded"),
        ("SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED", 20, "recorded"),
        ("SUBSCRIPTION_STATE_SOMETHING_NEW", 2, "recorded"),
    ])
    func eachSubscriptionStateSetsTheStatus(state: String, cause: Int, expected: String) throws {
        let purchase = SamplePlayPurchases.subscription(state: state, expiry: Self.now.addingTimeInterval(86_400))
        let decision = PlayDecider.decide(try Self.event(purchase, cause: cause), Self.state())
        if expected == "recorded" {
            #expect(decision.outcome == .recorded)
            #expect(decision.entitlements.isEmpty)
        } else {
            #expect(decision.entitlements.first?.status.rawValue == expected)
            #expect(decision.entitlements.first?.source == .playStore)
        }
    }

    /// Who cancelled an expired subscription, as its `canceledStateContext` says.
    enum Canceller: String, Sendable, CaseIterable { case user, system, developer, none }

    /// An expired subscription's `expiration_reason` and `cancelled_at`, from its
    /// `canceledStateContext` and from a cancel stored before (a `CANCELED` state seen earlier).
    @Test(arguments: [
        (Canceller.user, false, ExpirationReason.voluntary, "2027-01-01T00:00:00Z"),
        (.none, true, .voluntary, "2026-12-01T00:00:00Z"),
        (.user, true, .voluntary, "2027-01-01T00:00:00Z"),
        (.system, false, .billingError, nil),
        (.developer, false, .other, nil),
        // Cancelled by Google or the developer first (CANCELED stores its time), then expired.
        (.system, true, .billingError, "2026-12-01T00:00:00Z"),
        (.developer, true, .other, "2026-12-01T00:00:00Z"),
        (.none, false, .other, nil),
    ] as [(Canceller, Bool, ExpirationReason, String?)])
    func anExpirySaysWhyAndKeepsTheCancelTime(canceller: Canceller, storedCancel: Bool, reason: ExpirationReason, cancelledAt: String?) throws {
        var purchase = SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_EXPIRED", expiry: Self.now)
        switch canceller {
        case .user: purchase["canceledStateContext"] = ["userInitiatedCancellation": ["cancelTime": "2027-01-01T00:00:00Z"]] as [String: [String: String]]
        case .system: purchase["canceledStateContext"] = ["systemInitiatedCancellation": [:]] as [String: [String: String]]
        case .developer: purchase["canceledStateContext"] = ["developerInitiatedCancellation": [:]] as [String: [String: String]]
        case .none: break
        }
        var stored = EntitlementState(entityKey: "play:tok", userID: "user-1", productID: "pro", productType: .autoRenewable, source: .playStore, status: .active)
        if storedCancel {
            stored.status = .cancelled
            stored.cancelledAt = try Date("2026-12-01T00:00:00Z", strategy: .iso8601)
        }
        let entitlement = try #require(PlayDecider.decide(try Self.event(purchase, cause: 13), Self.state(stored)).entitlements.first)
        #expect(entitlement.status == .expired)
        #expect(entitlement.expirationReason == reason)
        #expect(entitlement.cancelledAt == (try cancelledAt.map { try Date($0, strategy: .iso8601) }))
    }

    @Test func theFieldsComeFromTheLongestLineItem() throws {
        var purchase = SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Self.now.addingTimeInterval(86_400), order: "GPA.9")
        var items = purchase["lineItems"] as! [[String: any Sendable]]
        var later = items[0]
        later["productId"] = "pro.plus"
        later["expiryTime"] = SamplePlayPurchases.rfc3339(Self.now.addingTimeInterval(10 * 86_400))
        items.append(later)
        purchase["lineItems"] = items
        let decision = PlayDecider.decide(try Self.event(purchase), Self.state())
        let entitlement = try #require(decision.entitlements.first)
        #expect(entitlement.productID == "pro.plus")
        #expect(entitlement.willRenew == true)
        #expect(abs((entitlement.expiresAt ?? .distantPast).timeIntervalSince(Self.now.addingTimeInterval(10 * 86_400))) < 0.01)
        #expect(decision.transactions.first?.amount == 699)
        #expect(decision.transactions.first?.currency == "EUR")
    }

    @Test func anOlderFetchChangesNothing() throws {
        var entitlement = EntitlementState(entityKey: "play:tok", userID: "user-1", productID: "pro", productType: .autoRenewable, source: .playStore, status: .expired)
        entitlement.lastEventTime = Self.now
        let purchase = SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Self.now.addingTimeInterval(86_400))
        let decision = PlayDecider.decide(try Self.event(purchase, at: Self.now.addingTimeInterval(-1)), Self.state(entitlement))
        #expect(decision.outcome == .stale)
    }

    @Test func aReplacedTokensStateIsOnlyRecorded() throws {
        let purchase = SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_EXPIRED", expiry: Self.now)
        let decision = PlayDecider.decide(try Self.event(purchase, cause: 13), Self.state(replacedBy: "newer"))
        #expect(decision.outcome == .recorded)
        #expect(decision.entitlements.isEmpty)
    }

    @Test func aVoidedEarlierOrderLeavesThePeriodInForce() throws {
        var entitlement = EntitlementState(entityKey: "play:tok", userID: "user-1", productID: "pro", productType: .autoRenewable, source: .playStore, status: .active)
        entitlement.expiresAt = Self.now.addingTimeInterval(20 * 86_400)
        var earlier = TransactionState(source: .playStore, providerTransactionID: "GPA.1", status: .succeeded)
        earlier.periodEnd = Self.now.addingTimeInterval(-10 * 86_400)
        earlier.amount = 699
        let record = PlayPurchaseRecord(
            cause: "VOIDED_PURCHASE", fetchedAt: Self.now, kind: .subscription, packageName: "p", productID: nil, purchaseToken: "tok",
            voided: .init(orderId: "GPA.1", voidedTimeMillis: nil), purchase: nil)
        let event = PlayDecider.Event(eventID: 1, time: Self.now, record: record, subscription: nil, product: nil)
        var state = Self.state(entitlement)
        state.transaction = earlier
        let decision = PlayDecider.decide(event, state)
        #expect(decision.entitlements.isEmpty)
        #expect(decision.transactions.first?.status == .refunded)
        #expect(decision.transactions.first?.amountRefunded == 699)
        state.transaction?.periodEnd = entitlement.expiresAt
        #expect(PlayDecider.decide(event, state).entitlements.first?.status == .refunded)
    }

    /// The order of a token an upgrade replaced, charged back: the order is refunded (so what it
    /// granted is taken back), the entitlement the newer token pays for is left alone.
    @Test func aVoidOfAReplacedTokensOrderRefundsItAndLeavesTheEntitlement() throws {
        var entitlement = EntitlementState(entityKey: "play:tok", userID: "user-1", productID: "pro", productType: .autoRenewable, source: .playStore, status: .active)
        entitlement.expiresAt = Self.now.addingTimeInterval(20 * 86_400)
        var replacedOrder = TransactionState(source: .playStore, providerTransactionID: "GPA.1", status: .succeeded)
        replacedOrder.amount = 699
        let record = PlayPurchaseRecord(
            cause: "VOIDED_PURCHASE", fetchedAt: Self.now, kind: .subscription, packageName: "p", productID: nil, purchaseToken: "tok",
            voided: .init(orderId: "GPA.1", voidedTimeMillis: nil), purchase: nil)
        let event = PlayDecider.Event(eventID: 1, time: Self.now, record: record, subscription: nil, product: nil)
        var state = Self.state(entitlement, replacedBy: "newer")
        state.transaction = replacedOrder
        let decision = PlayDecider.decide(event, state)
        #expect(decision.outcome == .applied)
        #expect(decision.entitlements.isEmpty)
        #expect(decision.transactions.first?.status == .refunded)
        #expect(decision.transactions.first?.amountRefunded == 699)
    }

    /// A free trial's period (`offerPhase.freeTrial`): its order charged nothing, so the ledger
    /// row's amount is 0, not the plan's price; the row is marked a trial (a product's trial
    /// currency grants apply), and the entitlement is trialing until the trial's end, or cancelled
    /// and still a trial once renewal is off. A paid period is neither.
    @Test func aFreeTrialsOrderChargedNothingAndIsATrial() throws {
        let expiry = Self.now.addingTimeInterval(7 * 86_400)
        let trial = PlayDecider.decide(
            try Self.event(SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ACTIVE", expiry: expiry, phase: "freeTrial")), Self.state())
        #expect(trial.transactions.first?.amount == 0)
        #expect(trial.transactions.first?.isTrial == true)
        #expect(trial.entitlements.first?.status == .trialing)
        #expect(trial.entitlements.first?.isTrial == true)
        #expect(trial.entitlements.first?.trialEndsAt == trial.entitlements.first?.expiresAt)
        let cancelled = PlayDecider.decide(
            try Self.event(SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_CANCELED", expiry: expiry, phase: "freeTrial"), cause: 3),
            Self.state())
        #expect(cancelled.entitlements.first?.status == .cancelled)
        #expect(cancelled.entitlements.first?.isTrial == true)
        let paid = PlayDecider.decide(
            try Self.event(SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Self.now.addingTimeInterval(30 * 86_400))),
            Self.state())
        #expect(paid.transactions.first?.amount == 699)
        #expect(paid.transactions.first?.isTrial == false)
        #expect(paid.entitlements.first?.status == .active)
        #expect(paid.entitlements.first?.isTrial == false)
        #expect(paid.entitlements.first?.trialEndsAt == nil)
    }

    /// The amount of an order by the pricing phase it was charged in: the list price
    /// (`recurringPrice`, 6.99) only for the base price, or an answer without a phase; nothing for
    /// a free trial; unknown for an introductory price or a plan change's proration, whose
    /// amount Google's answer does not carry (never the list price, which they are not).
    @Test(arguments: [("basePrice", 699), ("freeTrial", 0), ("introductoryPrice", nil), ("prorationPeriod", nil), (nil, 699)] as [(String?, Int64?)])
    func anOrdersAmountIsWhatItsPhaseCharged(phase: String?, amount: Int64?) throws {
        var purchase = SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Self.now.addingTimeInterval(30 * 86_400), phase: phase ?? "basePrice")
        if phase == nil, var items = purchase["lineItems"] as? [[String: any Sendable]] {
            items[0]["offerPhase"] = nil
            purchase["lineItems"] = items
        }
        let transaction = try #require(PlayDecider.decide(try Self.event(purchase), Self.state()).transactions.first)
        #expect(transaction.amount == amount)
        #expect(transaction.currency == "EUR", "the currency is the plan's, whatever the phase")
    }

    /// An active subscription in an introductory phase, and the state its first fetch leaves:
    /// its order's amount unknown, its currency the plan's.
    static func afterAnIntroductoryOrder() throws -> (purchase: [String: any Sendable], state: PlayDecider.State) {
        let introductory = SamplePlayPurchases.subscription(
            state: "SUBSCRIPTION_STATE_ACTIVE", expiry: now.addingTimeInterval(30 * 86_400), phase: "introductoryPrice")
        var state = Self.state()
        let first = PlayDecider.decide(try event(introductory), state)
        let order = try #require(first.transactions.first)
        #expect(order.amount == nil && order.currency == "EUR")
        state.transaction = order
        state.entitlement = first.entitlements.first
        return (introductory, state)
    }

    /// `offerPhase` is the item's phase now: a later state of the same order in another phase (on
    /// hold once the introductory periods are over) does not make its amount the list price.
    @Test func anIntroductoryOrdersAmountStaysUnknownWhenItsItemMovesOn() throws {
        let (_, state) = try Self.afterAnIntroductoryOrder()
        let later = SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ON_HOLD", expiry: Self.now.addingTimeInterval(30 * 86_400))
        let transaction = try #require(PlayDecider.decide(try Self.event(later, cause: 5), state).transactions.first)
        #expect(transaction.amount == nil)
        #expect(transaction.currency == "EUR")
    }

    /// With the order's `Order` fetched (the Orders API), an order whose state carries no price
    /// is what the buyer paid (4.99, tax included); one whose state says it (the base price, a free
    /// trial) keeps that; another order's `Order` says nothing of this one.
    @Test(arguments: [
        ("basePrice", "GPA.3331-7311-8633-87504", 699), ("freeTrial", "GPA.3331-7311-8633-87504", 0),
        ("introductoryPrice", "GPA.3331-7311-8633-87504", 499), ("prorationPeriod", "GPA.3331-7311-8633-87504", 499),
        ("introductoryPrice", "GPA.another", nil),
    ] as [(String, String, Int64?)])
    func aFetchedOrderIsTheAmountTheStateDoesNotSay(phase: String, orderID: String, amount: Int64?) throws {
        let purchase = SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Self.now.addingTimeInterval(30 * 86_400), phase: phase)
        let order = SamplePlayPurchases.order(orderID, token: "tok", product: "pro", total: ("EUR", "4", 990_000_000))
        let transaction = try #require(PlayDecider.decide(try Self.event(purchase, order: order), Self.state()).transactions.first)
        #expect(transaction.amount == amount)
        #expect(transaction.currency == "EUR")
    }

    /// An introductory order's amount, unknown from its first state, is filled by a later state
    /// of the same order fetched with its `Order`; a known amount is never changed by one.
    @Test func aLaterStateWithTheOrderFillsAnUnknownAmountOnly() throws {
        var (introductory, state) = try Self.afterAnIntroductoryOrder()
        let order = SamplePlayPurchases.order("GPA.3331-7311-8633-87504", token: "tok", product: "pro", total: ("EUR", "1", 490_000_000))
        let filled = try #require(PlayDecider.decide(try Self.event(introductory, at: Self.now.addingTimeInterval(1), order: order), state).transactions.first)
        #expect(filled.amount == 149)
        state.transaction = filled
        let other = SamplePlayPurchases.order("GPA.3331-7311-8633-87504", token: "tok", product: "pro", total: ("EUR", "9", 0))
        let kept = try #require(PlayDecider.decide(try Self.event(introductory, at: Self.now.addingTimeInterval(2), order: other), state).transactions.first)
        #expect(kept.amount == 149)
    }

    /// A one-time purchase's state carries no price: its amount is its `Order`'s total (¥480 in
    /// yen, which have no minor unit), else unknown.
    @Test func aOneTimePurchasesAmountIsItsOrdersTotal() throws {
        let purchase = SamplePlayPurchases.product("coins", order: "GPA.p")
        let paid = try Self.productEvent(purchase, order: SamplePlayPurchases.order("GPA.p", token: "tok", product: "coins", total: ("JPY", "480", 0)))
        let transaction = try #require(PlayDecider.decide(paid, Self.state()).transactions.first)
        #expect(transaction.amount == 480)
        #expect(transaction.currency == "JPY")
        let unknown = try #require(PlayDecider.decide(try Self.productEvent(purchase), Self.state()).transactions.first)
        #expect(unknown.amount == nil && unknown.currency == nil)
        // Voided before its state was applied: the whole amount, once known, is what was refunded.
        var voided = Self.state()
        voided.transaction = TransactionState(source: .playStore, providerTransactionID: "GPA.p", environment: .production, status: .refunded)
        let refunded = try #require(PlayDecider.decide(paid, voided).transactions.first)
        #expect(refunded.amount == 480 && refunded.amountRefunded == 480)
    }

    /// An `Order` of a base plan and an add-on charges each product its own line item's total; a
    /// negative total or `Money` Google cannot send (nanos past a unit, which would overflow)
    /// charges nothing.
    @Test func anOrdersChargeIsItsProductsLineItemAndNeverNonsense() {
        let eur = { (units: String, nanos: Int64) in PlayMoney(currencyCode: "EUR", units: units, nanos: nanos) }
        let order = PlayOrder(orderId: "GPA.a", total: eur("7", 0), lineItems: [
            .init(productId: "pro", total: eur("5", 0)), .init(productId: "storage", total: eur("2", 0)),
        ])
        #expect(order.charge(of: "GPA.a", product: "storage") == eur("2", 0))
        #expect(order.charge(of: "GPA.a", product: "other") == nil, "the order's total is several products'")
        #expect(order.charge(of: "GPA.b", product: "pro") == nil)
        #expect(PlayOrder(orderId: "GPA.a", total: eur("7", 0)).charge(of: "GPA.a", product: "pro") == eur("7", 0))
        #expect(PlayOrder(orderId: "GPA.a", total: eur("-7", 0)).charge(of: "GPA.a", product: "pro") == nil)
        #expect(PlayOrder(orderId: "GPA.a", total: eur("1", 9_000_000_000_000_000_000)).charge(of: "GPA.a", product: "pro") == nil)
        #expect(eur("1", -1_000_000_000).minorUnits == nil)
    }

    /// A state stored with an answer that is not one UTF-8 JSON object is refused before it is
    /// spliced into the row (a byte-order mark would make the whole row unreadable).
    @Test(arguments: [[0xEF, 0xBB, 0xBF] + Array(#"{"orderId":"GPA.a"}"#.utf8), Array("[]".utf8), Array(" \n".utf8)] as [[UInt8]])
    func anAnswerThatIsNotOneUTF8ObjectIsRefused(bytes: [UInt8]) {
        #expect(throws: (any Error).self) { try PlayNotificationHandler.checkIsObject(ByteBuffer(bytes: bytes)) }
    }

    /// Which states have their order's `Order` fetched: only those that do not say what it charged.
    @Test func theOrderIsFetchedOnlyWhereTheStateHasNoPrice() throws {
        func subscription(_ phase: String) throws -> PlaySubscriptionPurchase {
            let purchase = SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Self.now, order: "GPA.s", phase: phase)
            return try JSONDecoder().decode(PlaySubscriptionPurchase.self, from: try JSONSerialization.data(withJSONObject: purchase))
        }
        func product(_ state: Int) throws -> PlayProductPurchase {
            try JSONDecoder().decode(PlayProductPurchase.self, from: try JSONSerialization.data(withJSONObject: SamplePlayPurchases.product("c", state: state, order: "GPA.p")))
        }
        #expect(PlayOrder.orderToFetch(subscription: try subscription("introductoryPrice"), product: nil) == "GPA.s")
        #expect(PlayOrder.orderToFetch(subscription: try subscription("prorationPeriod"), product: nil) == "GPA.s")
        #expect(PlayOrder.orderToFetch(subscription: try subscription("basePrice"), product: nil) == nil)
        #expect(PlayOrder.orderToFetch(subscription: try subscription("freeTrial"), product: nil) == nil)
        var pending = try subscription("introductoryPrice")
        pending.subscriptionState = "SUBSCRIPTION_STATE_PENDING"
        #expect(PlayOrder.orderToFetch(subscription: pending, product: nil) == nil, "nothing charged yet")
        var replaced = try subscription("introductoryPrice")
        replaced.canceledStateContext = try JSONDecoder().decode(
            PlaySubscriptionPurchase.CanceledStateContext.self, from: Data(#"{"replacementCancellation":{}}"#.utf8))
        #expect(PlayOrder.orderToFetch(subscription: replaced, product: nil) == nil, "a replaced subscription's state is only recorded")
        #expect(PlayOrder.orderToFetch(subscription: nil, product: try product(0)) == "GPA.p")
        #expect(PlayOrder.orderToFetch(subscription: nil, product: try product(2)) == nil, "pending: nothing was charged yet")
    }

    /// The `Order` is stored as Google answered and read back; one that is not what Google
    /// documents is left out, never a reason to refuse the state it came with.
    @Test func aStoredOrderIsReadBackAndAMalformedOneIgnored() throws {
        let purchase = SamplePlayPurchases.product("coins", order: "GPA.p")
        let order = SamplePlayPurchases.order("GPA.p", token: "tok", product: "coins", total: ("EUR", "4", 990_000_000))
        let paid = PlayMoney(currencyCode: "EUR", units: "4", nanos: 990_000_000)
        #expect(try Self.productEvent(purchase, order: order).order == PlayOrder(
            orderId: "GPA.p", total: paid, lineItems: [.init(productId: "coins", total: paid)]))
        let malformed = try Self.productEvent(purchase, order: ["orderId": 7, "total": "4.99"])
        #expect(malformed.order == nil)
        #expect(malformed.product?.orderId == "GPA.p")
    }

    @Test(arguments: [("EUR", "6", 990_000_000, 699), ("JPY", "480", 0, 480), ("KWD", "1", 250_000_000, 1_250), ("USD", "0", 995_000_000, 100)] as [(String, String, Int64, Int64)])
    func googleMoneyIsMinorUnits(currency: String, units: String, nanos: Int64, expected: Int64) {
        #expect(PlayMoney(currencyCode: currency, units: units, nanos: nanos).minorUnits == expected)
    }

    @Test func aReplacedSubscriptionsStateIsOnlyRecorded() throws {
        var purchase = SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_EXPIRED", expiry: Self.now)
        purchase["canceledStateContext"] = ["replacementCancellation": [String: String]()]
        let decision = PlayDecider.decide(try Self.event(purchase, cause: 13), Self.state())
        #expect(decision.outcome == .recorded)
    }

    @Test func aNewTokenOfTheChainIsNeverStale() throws {
        var entitlement = EntitlementState(entityKey: "play:tok", userID: "user-1", productID: "pro", productType: .autoRenewable, source: .playStore, status: .cancelled)
        entitlement.lastEventTime = Self.now
        let purchase = SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ACTIVE", product: "pro.yearly", expiry: Self.now.addingTimeInterval(86_400))
        var state = Self.state(entitlement)
        state.joinsChain = true
        let decision = PlayDecider.decide(try Self.event(purchase, at: Self.now.addingTimeInterval(-5)), state)
        #expect(decision.entitlements.first?.status == .active)
        #expect(decision.entitlements.first?.productID == "pro.yearly")
    }

    @Test func aRefundIsFinal() throws {
        var refunded = EntitlementState(entityKey: "play:tok", userID: "user-1", productID: "pro", productType: .autoRenewable, source: .playStore, status: .refunded)
        refunded.lastEventTime = Self.now.addingTimeInterval(-60)
        let expired = SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_EXPIRED", expiry: Self.now)
        #expect(PlayDecider.decide(try Self.event(expired, cause: 13), Self.state(refunded)).entitlements.first?.status == .refunded)
        // A state fetched before the void, applied after it, grants nothing: its order is refunded.
        var state = Self.state()
        state.transaction = TransactionState(source: .playStore, providerTransactionID: "GPA.3331-7311-8633-87504", status: .refunded)
        let active = SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Self.now.addingTimeInterval(86_400))
        #expect(PlayDecider.decide(try Self.event(active), state).entitlements.first?.status == .refunded)
    }

    @Test func aVoidBeforeAnyStateKeepsItsLedgerRow() {
        let record = PlayPurchaseRecord(
            cause: "VOIDED_PURCHASE", fetchedAt: Self.now, kind: .product, packageName: "p", productID: nil, purchaseToken: "tok",
            voided: .init(orderId: "GPA.v", voidedTimeMillis: nil), purchase: nil)
        let decision = PlayDecider.decide(PlayDecider.Event(eventID: 1, time: Self.now, record: record), Self.state())
        #expect(decision.entitlements.isEmpty)
        #expect(decision.transactions.first?.status == .refunded)
        let partial = PlayPurchaseRecord(
            cause: "VOIDED_PURCHASE", fetchedAt: Self.now, kind: .product, packageName: "p", productID: nil, purchaseToken: "tok",
            voided: .init(orderId: "GPA.v", voidedTimeMillis: nil, partial: true), purchase: nil)
        #expect(PlayDecider.decide(PlayDecider.Event(eventID: 1, time: Self.now, record: partial), Self.state()).outcome == .recorded)
    }

    @Test func aCanceledProductNeverGrantedIsOnlyRecorded() throws {
        let record = PlayPurchaseRecord(
            cause: "ONE_TIME_PRODUCT_CANCELED", fetchedAt: Self.now, kind: .product, packageName: "p", productID: "coins", purchaseToken: "tok",
            purchase: ByteBuffer(data: try JSONSerialization.data(withJSONObject: SamplePlayPurchases.product("coins", state: 1))))
        let (decoded, _, product, _) = try PlayPurchaseRecord.decode(record.encoded())
        let decision = PlayDecider.decide(PlayDecider.Event(eventID: 1, time: Self.now, record: decoded, product: product), Self.state())
        #expect(decision.outcome == .recorded)
        #expect(decision.transactions.isEmpty)
    }
}
