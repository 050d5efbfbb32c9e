// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

/// The checkout's decisions as tables: the single flight's slot, the status the app reads, and
/// the form Stripe is sent.
struct CheckoutDecisionTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let hour: TimeInterval = 3_600

    struct SlotCase: Sendable, CustomTestStringConvertible {
        var name: String
        var open: CheckoutSlot.Open?
        var terms = "t1"
        var expected: CheckoutSlot.Action
        var testDescription: String { name }
    }

    static func open(
        terms: String = "t1", age: TimeInterval = 60, claimedFor: TimeInterval? = nil, answered: Bool = true, status: CheckoutStatus = .pending,
        expiresIn: TimeInterval = 86_400, mayBeHandedOver: Bool = true
    ) -> CheckoutSlot.Open {
        CheckoutSlot.Open(
            terms: terms, createdAt: now.addingTimeInterval(-age), claimedUntil: claimedFor.map { now.addingTimeInterval($0) }, answered: answered,
            status: status, expiresAt: now.addingTimeInterval(expiresIn), mayBeHandedOver: mayBeHandedOver)
    }

    @Test(arguments: [
        SlotCase(name: "none open: make one", open: nil, expected: .create),
        SlotCase(name: "the same pending checkout within the hour: answered again", open: open(), expected: .reuse),
        SlotCase(name: "being made by another request: wait", open: open(claimedFor: 5, answered: false), expected: .wait),
        SlotCase(name: "its maker gave up: take it over under the same keys", open: open(claimedFor: -1, answered: false), expected: .takeOver),
        SlotCase(name: "its maker gave up and the price changed: replace it", open: open(terms: "t0", claimedFor: -1, answered: false), expected: .supersede),
        SlotCase(name: "its maker gave up longer ago than the reuse window: replace it", open: open(age: hour, claimedFor: -1, answered: false),
                 expected: .supersede),
        SlotCase(name: "its maker gave up and its window is about to end: replace it", open: open(claimedFor: -1, answered: false, expiresIn: 200),
                 expected: .supersede),
        SlotCase(name: "another price or trial: replace it", open: open(terms: "t0"), expected: .supersede),
        SlotCase(name: "older than the reuse window: replace it", open: open(age: hour), expected: .supersede),
        SlotCase(name: "within 5 minutes of its window's end: replace it", open: open(expiresIn: 200), expected: .supersede),
        SlotCase(name: "past its window, not swept yet: replace it", open: open(expiresIn: -10), expected: .supersede),
        SlotCase(name: "another app request for the user: replace it, never hand it over", open: open(mayBeHandedOver: false), expected: .supersede),
        SlotCase(name: "another app request, its maker gave up: replace it", open: open(claimedFor: -1, answered: false, mayBeHandedOver: false),
                 expected: .supersede),
        SlotCase(name: "another app request while it is being made: wait", open: open(claimedFor: 5, answered: false, mayBeHandedOver: false),
                 expected: .wait),
        SlotCase(name: "another app request after its payment began: a new one beside it", open: open(status: .processing, mayBeHandedOver: false),
                 expected: .release),
        SlotCase(name: "processing: a new one beside it", open: open(status: .processing), expected: .release),
        SlotCase(name: "paid: a new one beside it", open: open(status: .succeeded), expected: .release),
        SlotCase(name: "failed: a new one beside it", open: open(status: .failed), expected: .release),
    ])
    func slot(_ c: SlotCase) {
        #expect(CheckoutSlot.decide(open: c.open, terms: c.terms, now: Self.now, reuseWindow: Self.hour) == c.expected)
    }

    struct StatusCase: Sendable, CustomTestStringConvertible {
        var name: String
        var savesACardFirst = false
        var state: CheckoutRowState
        var answered = true
        var transaction: TransactionStatus?
        var live = false
        var expected: CheckoutStatus
        var testDescription: String { name }
    }

    @Test(arguments: [
        StatusCase(name: "made, nothing applied yet", state: .open, expected: .pending),
        StatusCase(name: "a pending transaction is still pending", state: .open, transaction: .pending, expected: .pending),
        StatusCase(name: "processing", state: .released, transaction: .processing, expected: .processing),
        StatusCase(name: "paid", state: .open, transaction: .succeeded, expected: .succeeded),
        StatusCase(name: "paid on a replaced checkout still succeeded", state: .superseded, transaction: .succeeded, expected: .succeeded),
        StatusCase(name: "refunded", state: .open, transaction: .refunded, expected: .refunded),
        StatusCase(name: "a subscription live before its invoice event", state: .open, live: true, expected: .succeeded),
        StatusCase(name: "a trial is trialing before any card: still pending", savesACardFirst: true, state: .open, live: true, expected: .pending),
        StatusCase(name: "a trial whose SetupIntent succeeded", savesACardFirst: true, state: .open, transaction: .succeeded, live: true, expected: .succeeded),
        StatusCase(name: "a trial made without a SetupIntent, live", state: .open, live: true, expected: .succeeded),
        StatusCase(name: "replaced", state: .superseded, expected: .failed),
        StatusCase(name: "expired", state: .expired, expected: .failed),
        StatusCase(name: "Stripe refused to make it", state: .released, answered: false, expected: .failed),
        StatusCase(name: "payment failed", state: .open, transaction: .failed, expected: .failed),
    ])
    func status(_ c: StatusCase) {
        #expect(CheckoutStatus.of(savesACardFirst: c.savesACardFirst, row: c.state, answered: c.answered, transaction: c.transaction, entitlementIsLive: c.live) == c.expected)
    }

    @Test func onlyPendingAndProcessingAreWaitedOn() {
        #expect(CheckoutStatus.allCases.filter(\.isUnsettled) == [.pending, .processing])
    }

    @Test func theFormIsStripesEncodingInTheOrderGiven() {
        var form = StripeForm()
        form.add("amount", 4_999)
        form.add("line_items[0][price]", "price_1")
        form.addMetadata(["user_id": "a b&c=d", "product_id": "pro"])
        form.add("skipped", nil as String?)
        form.expand("latest_invoice.confirmation_secret")
        #expect(form.encoded == "amount=4999&line_items%5B0%5D%5Bprice%5D=price_1&metadata%5Bproduct_id%5D=pro"
            + "&metadata%5Buser_id%5D=a%20b%26c%3Dd&expand%5B%5D=latest_invoice.confirmation_secret")
        #expect(StripeForm.decode(form.encoded).map { "\($0.key)=\($0.value)" }
            == ["amount=4999", "line_items[0][price]=price_1", "metadata[product_id]=pro", "metadata[user_id]=a b&c=d", "expand[]=latest_invoice.confirmation_secret"])
    }

    @Test func termsDifferWhenThePriceOrTrialDoes() {
        let price = StripePrice(id: "price_1", unitAmount: 999, currency: "eur", interval: "month", intervalCount: 1)
        var cheaper = price
        cheaper.unitAmount = 499
        let base = CheckoutTerms(kind: .subscription, price: price)
        #expect(base.text == CheckoutTerms(kind: .subscription, price: price).text)
        #expect(base.text != CheckoutTerms(kind: .subscription, price: cheaper).text)
        #expect(base.text != CheckoutTerms(kind: .trial, price: price, trialDays: 7).text)
        #expect(CheckoutTerms(kind: .trial, price: price, trialDays: 7).text != CheckoutTerms(kind: .trial, price: price, trialDays: 14).text)
    }

    @Test(arguments: [
        ("incomplete", false, true), ("trialing", true, true), ("trialing", false, false), ("active", false, false),
        ("past_due", false, false), ("canceled", false, false), ("incomplete_expired", false, false),
    ])
    func onlyAnUnconfirmedSubscriptionIsCancelled(_ status: String, _ pendingSetupIntent: Bool, _ expected: Bool) {
        #expect(StripeCheckoutAPI.isUnconfirmed(status: status, pendingSetupIntent: pendingSetupIntent) == expected)
    }

    @Test(arguments: [
        (ProductType.autoRenewable, true, true), (.autoRenewable, false, false),
        (.consumable, false, true), (.consumable, true, false),
        (.nonConsumable, false, true), (.nonConsumable, true, false),
        (.nonRenewing, false, true), (.nonRenewing, true, false),
    ])
    func onlyASubscriptionIsSoldAtARecurringPrice(_ type: ProductType, _ recurring: Bool, _ fits: Bool) {
        #expect(type.fitsStripePrice(recurring: recurring) == fits)
    }

    @Test func aRefusalIsAnOutageOnlyWhenRetryingMayHelp() {
        #expect(StripeRefusal(status: nil, message: "no answer").isOutage)
        #expect(StripeRefusal(status: 503, message: "").isOutage)
        #expect(StripeRefusal(status: 429, message: "").isOutage)
        #expect(StripeRefusal(status: 409, type: "idempotency_error", message: "in flight").isOutage)
        #expect(!StripeRefusal(status: 400, type: "invalid_request_error", message: "").isOutage)
        #expect(!StripeRefusal(status: 402, type: "card_error", message: "").isOutage)
        #expect(!StripeRefusal(status: 400, type: "idempotency_error", message: "other parameters").isOutage)
    }
}
