// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

@testable import Worker

/// The Stripe transitions as a table, without a database: each row is the state loaded, the
/// event, and the decision docs/TRANSITIONS.md and docs/stripe.md say it makes.
struct StripeDeciderTests {
    /// One row: (loaded state, event) → what the decision must hold.
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var type: String
        var object: JSONValue
        var previous: JSONValue = .null
        var apiVersion: String?
        var created = T.now
        var subject: StripeDecider.Subject
        var state = StripeDecider.State()
        var expect: Expected
        var testDescription: String { name }
    }

    /// What a decision must hold; `nil` fields are not checked.
    struct Expected: Sendable {
        var outcome: EventOutcome?
        var unlinked = false
        /// The entitlement written, or `.some(nil)` for "no entitlement written".
        var entitlement: EntitlementStatus??
        var transaction: TransactionStatus??
        var productID: String?
        var expiresAt: Date?
        var willRenew: Bool?
        var amountRefunded: Int64?
        /// The ledger row's amount (minor units).
        var amount: Int64?
        /// The status written for each companion product of a subscription with several items.
        var companions: [String: EntitlementStatus]?
        var detail: String?
        var links: [ProviderLink.Kind]?
    }

    /// Times of the rows: `now` is the event's, `earlier` the state's.
    enum T {
        static let earlier = Date(timeIntervalSince1970: 1_750_000_000)
        static let now = Date(timeIntervalSince1970: 1_750_000_100)
        static let periodEnd = Date(timeIntervalSince1970: 1_752_592_000)
        static let nextPeriodEnd = Date(timeIntervalSince1970: 1_755_184_000)
    }

    static let key = StripeScope.platformLive.subscriptionKey("sub_1")

    static func entitlement(_ status: EntitlementStatus, product: String = "pro.monthly", expires: Date = T.periodEnd) -> EntitlementState {
        var e = EntitlementState(entityKey: key, userID: "user_1", productID: product, productType: .autoRenewable, source: .webCheckout, status: status)
        e.expiresAt = expires
        e.willRenew = true
        e.lastEventTime = T.earlier
        return e
    }

    static func transaction(_ id: String, _ status: TransactionStatus, at time: Date = T.earlier, paidUntil: Date? = nil) -> TransactionState {
        var t = TransactionState(source: .webCheckout, providerTransactionID: id, status: status)
        t.userID = "user_1"
        t.entitlementKey = key
        t.amount = 999
        t.lastEventTime = time
        t.periodEnd = paidUntil
        return t
    }

    /// The entitlement of a subscription's other item, `product`.
    static func companion(_ product: String, _ status: EntitlementStatus) -> EntitlementState {
        var e = entitlement(status, product: product)
        e.entityKey = StripeDecider.companionKey(of: key, product: product)
        return e
    }

    /// A dispute of `pi_1`'s charge for its whole amount.
    static func dispute(_ status: String) -> JSONValue {
        json(#"{"id":"dp_1","object":"dispute","charge":"ch_1","payment_intent":"pi_1","status":"\#(status)","amount":999,"currency":"usd"}"#)
    }

    static func json(_ text: String) -> JSONValue { try! JSONValue.parse(Data(text.utf8)) }

    static let subscribed = StripeDecider.Subject(entitlementKey: key, userID: "user_1", productID: "pro.monthly", isKnown: true)
    static func paying(_ transaction: String, invoice: String? = nil, known: Bool = true, entitlement: String? = key) -> StripeDecider.Subject {
        StripeDecider.Subject(entitlementKey: entitlement, transactionKey: transaction, userID: "user_1", invoiceID: invoice, isKnown: known)
    }
    static func subscription(_ fields: String = "") -> JSONValue {
        json(#"{"id":"sub_1","object":"subscription","status":"active","current_period_end":1752592000,"cancel_at_period_end":false"# + fields + "}")
    }
    static func invoice(
        _ id: String, reason: String = "subscription_cycle", paid: Int = 999, subtotal: Int? = nil, end: Int = 1_755_184_000
    ) -> JSONValue {
        json(#"{"id":"\#(id)","object":"invoice","billing_reason":"\#(reason)","amount_paid":\#(paid),"subtotal":\#(subtotal ?? paid),"currency":"usd","#
             + #""lines":{"data":[{"period":{"start":1752592000,"end":\#(end)}}]}}"#)
    }
    static func charge(refunded: Bool, amountRefunded: Int) -> JSONValue {
        json(#"{"id":"ch_1","object":"charge","payment_intent":"pi_1","amount":999,"amount_refunded":\#(amountRefunded),"refunded":\#(refunded)}"#)
    }

    static let rows: [Row] = [
        // Payments
        Row(name: "a PaymentIntent with the app's metadata is a purchase", type: "payment_intent.succeeded",
            object: json(#"{"id":"pi_1","object":"payment_intent","amount":999,"amount_received":999,"currency":"usd","metadata":{"user_id":"user_1","product_id":"pro.lifetime"}}"#),
            subject: .init(entitlementKey: StripeScope.platformLive.paymentKey("pi_1"), transactionKey: "pi_1", userID: "user_1", productID: "pro.lifetime", isKnown: true),
            expect: .init(outcome: .applied, entitlement: .active, transaction: .succeeded, productID: "pro.lifetime")),
        Row(name: "a PaymentIntent of a purchase made outside the app is recorded, not retried", type: "payment_intent.succeeded",
            object: json(#"{"id":"pi_9","object":"payment_intent","amount":500,"metadata":{}}"#),
            subject: .init(entitlementKey: StripeScope.platformLive.paymentKey("pi_9"), transactionKey: "pi_9", isKnown: false),
            expect: .init(outcome: .recorded, entitlement: .some(nil), transaction: .some(nil), detail: "not the app's", links: [])),
        Row(name: "a PaymentIntent without invoice in a version that would name one is marked outside the app", type: "payment_intent.succeeded",
            object: json(#"{"id":"pi_9","object":"payment_intent","amount":500,"metadata":{}}"#), apiVersion: "2024-06-20",
            subject: .init(entitlementKey: StripeScope.platformLive.paymentKey("pi_9"), transactionKey: "pi_9", isKnown: false),
            expect: .init(outcome: .recorded, links: [.stripeOutsidePayment])),
        Row(name: "from basil it is not: its invoice may still link it", type: "payment_intent.succeeded",
            object: json(#"{"id":"pi_9","object":"payment_intent","amount":500,"metadata":{}}"#), apiVersion: "2025-03-31.basil",
            subject: .init(entitlementKey: StripeScope.platformLive.paymentKey("pi_9"), transactionKey: "pi_9", isKnown: false),
            expect: .init(outcome: .recorded, links: [])),
        Row(name: "a Checkout Session that names nothing of the app's is recorded", type: "checkout.session.completed",
            object: json(#"{"id":"cs_9","object":"checkout.session","mode":"payment","payment_status":"paid","payment_intent":"pi_9","metadata":{}}"#),
            subject: .init(entitlementKey: StripeScope.platformLive.paymentKey("pi_9"), transactionKey: "pi_9", isKnown: false),
            expect: .init(outcome: .recorded, entitlement: .some(nil), transaction: .some(nil), detail: "not the app's")),
        Row(name: "a Billing PaymentIntent moves its invoice's payment and leaves the entitlement to the invoice", type: "payment_intent.succeeded",
            object: json(#"{"id":"pi_2","object":"payment_intent","amount_received":999,"invoice":"in_2","latest_charge":"ch_2","metadata":{}}"#),
            subject: paying("in_2", invoice: "in_2"), state: .init(entitlement: entitlement(.active), transaction: transaction("in_2", .pending)),
            expect: .init(outcome: .applied, entitlement: .some(nil), transaction: .succeeded,
                          links: [.stripePaymentIntent, .stripeInvoice, .stripeCharge])),
        Row(name: "a Billing PaymentIntent of an invoice not known yet only links", type: "payment_intent.succeeded",
            object: json(#"{"id":"pi_3","object":"payment_intent","invoice":"in_3","metadata":{}}"#),
            subject: paying("in_3", invoice: "in_3", known: false, entitlement: nil),
            expect: .init(outcome: .recorded, transaction: .some(nil), links: [.stripePaymentIntent, .stripeInvoice])),
        Row(name: "a failure in the same second as the success does not undo it", type: "payment_intent.payment_failed",
            object: json(#"{"id":"pi_1","object":"payment_intent","metadata":{"user_id":"user_1"}}"#), created: T.earlier,
            subject: paying("pi_1"), state: .init(transaction: transaction("pi_1", .succeeded)),
            expect: .init(outcome: .recorded, transaction: .some(nil))),
        Row(name: "a failure after processing fails the payment", type: "payment_intent.payment_failed",
            object: json(#"{"id":"pi_1","object":"payment_intent","metadata":{"user_id":"user_1"}}"#),
            subject: paying("pi_1"), state: .init(transaction: transaction("pi_1", .processing)),
            expect: .init(outcome: .applied, transaction: .failed)),
        Row(name: "processing in the same second as a failure loses the tie", type: "payment_intent.processing",
            object: json(#"{"id":"pi_1","object":"payment_intent","metadata":{"user_id":"user_1"}}"#), created: T.earlier,
            subject: paying("pi_1"), state: .init(transaction: transaction("pi_1", .failed)),
            expect: .init(outcome: .recorded, transaction: .some(nil))),
        Row(name: "an older processing is stale", type: "payment_intent.processing",
            object: json(#"{"id":"pi_1","object":"payment_intent","metadata":{"user_id":"user_1"}}"#), created: T.earlier.addingTimeInterval(-5),
            subject: paying("pi_1"), state: .init(transaction: transaction("pi_1", .failed)),
            expect: .init(outcome: .stale, transaction: .some(nil))),
        Row(name: "a late success of a refunded payment grants nothing", type: "payment_intent.succeeded",
            object: json(#"{"id":"pi_1","object":"payment_intent","metadata":{"user_id":"user_1","product_id":"pro.lifetime"}}"#),
            subject: .init(entitlementKey: StripeScope.platformLive.paymentKey("pi_1"), transactionKey: "pi_1", userID: "user_1", productID: "pro.lifetime", isKnown: true),
            state: .init(transaction: transaction("pi_1", .refunded)),
            expect: .init(outcome: .recorded, entitlement: .some(nil), transaction: .some(nil))),
        Row(name: "an InvoicePayment marks its invoice's payment paid", type: "invoice_payment.paid",
            object: json(#"{"id":"inpay_1","object":"invoice_payment","invoice":"in_2","amount_paid":999,"currency":"usd","payment":{"type":"payment_intent","payment_intent":"pi_2"}}"#),
            subject: paying("in_2", invoice: "in_2"), state: .init(entitlement: entitlement(.active)),
            expect: .init(outcome: .applied, entitlement: .some(nil), transaction: .succeeded, links: [.stripeInvoice, .stripePaymentIntent])),
        Row(name: "a delayed Checkout payment that succeeds grants the product", type: "checkout.session.async_payment_succeeded",
            object: json(#"{"id":"cs_1","object":"checkout.session","mode":"payment","payment_status":"paid","payment_intent":"pi_4","amount_total":999,"currency":"eur","metadata":{"user_id":"user_1","product_id":"pro.lifetime"}}"#),
            subject: .init(entitlementKey: StripeScope.platformLive.paymentKey("pi_4"), transactionKey: "pi_4", userID: "user_1", productID: "pro.lifetime", isKnown: true),
            state: .init(transaction: transaction("pi_4", .pending)),
            expect: .init(outcome: .applied, entitlement: .active, transaction: .succeeded)),
        Row(name: "a delayed Checkout payment that fails fails the payment", type: "checkout.session.async_payment_failed",
            object: json(#"{"id":"cs_1","object":"checkout.session","mode":"payment","payment_status":"unpaid","payment_intent":"pi_4","metadata":{"user_id":"user_1"}}"#),
            subject: paying("pi_4", entitlement: StripeScope.platformLive.paymentKey("pi_4")), state: .init(transaction: transaction("pi_4", .pending)),
            expect: .init(outcome: .applied, entitlement: .some(nil), transaction: .failed)),

        // Subscriptions
        Row(name: "a plan changed in place follows the new price and says so", type: "customer.subscription.updated",
            object: json(#"{"id":"sub_1","object":"subscription","status":"active","current_period_end":1752592000,"items":{"data":[{"price":{"id":"price_y","product":"prod_y","lookup_key":"pro.yearly","metadata":{}}}]},"metadata":{"user_id":"user_1","product_id":"pro.monthly"}}"#),
            previous: json(#"{"items":{"data":[{"price":{"id":"price_m","product":"prod_m","lookup_key":"pro.monthly"}}]}}"#),
            subject: .init(entitlementKey: key, userID: "user_1", productID: "pro.yearly", isKnown: true), state: .init(entitlement: entitlement(.active)),
            expect: .init(outcome: .applied, entitlement: .active, productID: "pro.yearly", detail: "product changed from pro.monthly to pro.yearly")),
        Row(name: "cancel_at cancels, with access until then", type: "customer.subscription.updated",
            object: subscription(#","cancel_at":1751000000"#), subject: subscribed, state: .init(entitlement: entitlement(.active)),
            expect: .init(outcome: .applied, entitlement: .cancelled, expiresAt: Date(timeIntervalSince1970: 1_751_000_000), willRenew: false)),
        Row(name: "pause_collection void pauses", type: "customer.subscription.updated",
            object: subscription(#","pause_collection":{"behavior":"void","resumes_at":null}"#), subject: subscribed,
            state: .init(entitlement: entitlement(.active)), expect: .init(outcome: .applied, entitlement: .paused)),
        Row(name: "pause_collection keep_as_draft keeps access", type: "customer.subscription.updated",
            object: subscription(#","pause_collection":{"behavior":"keep_as_draft","resumes_at":null}"#), subject: subscribed,
            state: .init(entitlement: entitlement(.active)), expect: .init(outcome: .applied, entitlement: .active)),
        Row(name: "an active update does not undo a refund of the period in force", type: "customer.subscription.updated",
            object: subscription(), subject: subscribed, state: .init(entitlement: entitlement(.refunded)),
            expect: .init(outcome: .applied, entitlement: .refunded, detail: "stays refunded")),
        Row(name: "nor a dispute's revocation", type: "customer.subscription.resumed",
            object: subscription(), subject: subscribed, state: .init(entitlement: entitlement(.revoked)),
            expect: .init(outcome: .applied, entitlement: .revoked)),
        Row(name: "the subscription's end ends a revoked one too", type: "customer.subscription.deleted",
            object: subscription(), subject: subscribed, state: .init(entitlement: entitlement(.refunded)),
            expect: .init(outcome: .applied, entitlement: .expired, willRenew: false)),
        Row(name: "a newer period's payment restores access after a refund", type: "invoice.paid",
            object: invoice("in_3"), subject: paying("in_3", invoice: "in_3"), state: .init(entitlement: entitlement(.refunded)),
            expect: .init(outcome: .applied, entitlement: .active, transaction: .succeeded, expiresAt: T.nextPeriodEnd)),
        Row(name: "a late invoice of the refunded period restores nothing", type: "invoice.paid",
            object: invoice("in_2", end: 1_752_592_000), subject: paying("in_2", invoice: "in_2"),
            state: .init(entitlement: entitlement(.refunded), transaction: transaction("in_2", .refunded, paidUntil: T.periodEnd)),
            expect: .init(outcome: .applied, entitlement: .refunded, transaction: .refunded, expiresAt: T.periodEnd)),
        Row(name: "a trial's $0 first invoice is recorded", type: "invoice.paid",
            object: invoice("in_0", reason: "subscription_create", paid: 0), subject: paying("in_0", invoice: "in_0"),
            expect: .init(outcome: .recorded, entitlement: .some(nil), transaction: .some(nil))),
        Row(name: "a first invoice paid in full by a coupon is a payment of 0", type: "invoice.paid",
            object: invoice("in_0", reason: "subscription_create", paid: 0, subtotal: 999), subject: paying("in_0", invoice: "in_0"),
            state: .init(entitlement: entitlement(.active)),
            expect: .init(outcome: .applied, entitlement: .active, transaction: .succeeded, amount: 0)),
        Row(name: "a $0 renewal (a 100 % coupon) extends the period and enters the ledger at 0", type: "invoice.paid",
            object: invoice("in_4", paid: 0, subtotal: 999), subject: paying("in_4", invoice: "in_4"), state: .init(entitlement: entitlement(.active)),
            expect: .init(outcome: .applied, entitlement: .active, transaction: .succeeded, expiresAt: T.nextPeriodEnd, amount: 0)),
        Row(name: "a renewal in yen is stored in yen", type: "invoice.paid",
            object: json(#"{"id":"in_6","object":"invoice","billing_reason":"subscription_cycle","amount_paid":480,"currency":"jpy","lines":{"data":[{"period":{"start":1752592000,"end":1755184000}}]}}"#),
            subject: paying("in_6", invoice: "in_6"), state: .init(entitlement: entitlement(.active)),
            expect: .init(outcome: .applied, transaction: .succeeded, amount: 480)),
        Row(name: "Stripe's two-decimal ISK becomes ISO 4217's whole krónur", type: "invoice.paid",
            object: json(#"{"id":"in_8","object":"invoice","billing_reason":"subscription_cycle","amount_paid":149900,"currency":"isk","lines":{"data":[{"period":{"start":1752592000,"end":1755184000}}]}}"#),
            subject: paying("in_8", invoice: "in_8"), state: .init(entitlement: entitlement(.active)),
            expect: .init(outcome: .applied, transaction: .succeeded, amount: 1_499)),
        Row(name: "an invoice of the app's subscription that names no user yet waits for it", type: "invoice.paid",
            object: invoice("in_1"), subject: .init(entitlementKey: key, transactionKey: "in_1", productID: "pro.monthly", invoiceID: "in_1", isKnown: true),
            expect: .init(unlinked: true)),
        Row(name: "an invoice whose subscription metadata names the user creates the entitlement", type: "invoice.paid",
            object: invoice("in_1"), subject: .init(entitlementKey: key, transactionKey: "in_1", userID: "user_1", productID: "pro.monthly", invoiceID: "in_1", isKnown: true),
            expect: .init(outcome: .applied, entitlement: .active, transaction: .succeeded, productID: "pro.monthly", expiresAt: T.nextPeriodEnd)),
        Row(name: "an invoice of a subscription outside the app is recorded and its payment marked", type: "invoice.paid",
            object: invoice("in_7"), subject: .init(entitlementKey: key, transactionKey: "in_7", invoiceID: "in_7", isKnown: false),
            expect: .init(outcome: .recorded, entitlement: .some(nil), transaction: .some(nil), links: [.stripeOutsidePayment])),
        Row(name: "a subscription outside the app is recorded", type: "customer.subscription.updated",
            object: subscription(), subject: .init(entitlementKey: key, productID: "prod_1", isKnown: false),
            expect: .init(outcome: .recorded, entitlement: .some(nil), detail: "not the app's")),
        Row(name: "an invoice of no subscription is recorded", type: "invoice.paid",
            object: invoice("in_5", reason: "manual"), subject: paying("in_5", invoice: "in_5", entitlement: nil),
            expect: .init(outcome: .recorded, transaction: .some(nil))),

        // Subscriptions with several items: one entitlement per item's product, sharing the subscription's life
        Row(name: "each item of a subscription grants its product", type: "customer.subscription.created",
            object: subscription(#","items":{"data":[{"price":{"id":"price_1","product":"prod_1"}},{"price":{"id":"price_2","product":"prod_2","lookup_key":"addon.storage"}},{"price":{"id":"price_3","product":"prod_3","metadata":{"product_id":"addon.support"}}}]}"#),
            subject: subscribed,
            expect: .init(outcome: .applied, entitlement: .active, productID: "pro.monthly",
                          companions: ["addon.storage": .active, "addon.support": .active])),
        Row(name: "an item whose product is the subscription's adds no second entitlement", type: "customer.subscription.updated",
            object: subscription(#","items":{"data":[{"price":{"id":"price_1","product":"prod_1"}},{"price":{"id":"price_1b","product":"prod_1","metadata":{"product_id":"pro.monthly"}}}]}"#),
            subject: subscribed, state: .init(entitlement: entitlement(.active)),
            expect: .init(outcome: .applied, entitlement: .active, companions: [:])),
        Row(name: "a cancellation reaches every item", type: "customer.subscription.updated",
            object: json(#"{"id":"sub_1","object":"subscription","status":"active","current_period_end":1752592000,"cancel_at_period_end":true,"#
                         + #""items":{"data":[{"price":{"id":"price_1","product":"prod_1"}},{"price":{"id":"price_2","product":"prod_2","lookup_key":"addon.storage"}}]}}"#),
            subject: subscribed, state: .init(entitlement: entitlement(.active), companions: [companion("addon.storage", .active)]),
            expect: .init(outcome: .applied, entitlement: .cancelled, companions: ["addon.storage": .cancelled])),
        Row(name: "an item removed from the subscription expires, the others go on", type: "customer.subscription.updated",
            object: subscription(#","items":{"data":[{"price":{"id":"price_1","product":"prod_1"}}]}"#),
            subject: subscribed, state: .init(entitlement: entitlement(.active), companions: [companion("addon.storage", .active)]),
            expect: .init(outcome: .applied, entitlement: .active, companions: ["addon.storage": .expired])),
        Row(name: "a renewal invoice extends every item", type: "invoice.paid",
            object: invoice("in_3"), subject: paying("in_3", invoice: "in_3"),
            state: .init(entitlement: entitlement(.pastDue), companions: [companion("addon.storage", .pastDue)]),
            expect: .init(outcome: .applied, entitlement: .active, expiresAt: T.nextPeriodEnd, companions: ["addon.storage": .active])),
        Row(name: "a later invoice does not bring back an item removed from the subscription", type: "invoice.paid",
            object: invoice("in_3"), subject: paying("in_3", invoice: "in_3"),
            state: .init(entitlement: entitlement(.active), companions: [companion("addon.storage", .expired), companion("addon.support", .active)]),
            expect: .init(outcome: .applied, entitlement: .active, companions: ["addon.support": .active])),
        Row(name: "a refund of the period in force ends every item's access", type: "charge.refunded",
            object: charge(refunded: true, amountRefunded: 999), subject: paying("in_2"),
            state: .init(entitlement: entitlement(.active), transaction: transaction("in_2", .succeeded, paidUntil: T.periodEnd),
                         companions: [companion("addon.storage", .active)]),
            expect: .init(outcome: .applied, entitlement: .refunded, transaction: .refunded, companions: ["addon.storage": .refunded])),

        // Refunds and disputes
        Row(name: "a partial refund records the amount and keeps the status", type: "charge.refunded",
            object: charge(refunded: false, amountRefunded: 300), subject: paying("pi_1"),
            state: .init(entitlement: entitlement(.active), transaction: transaction("pi_1", .succeeded)),
            expect: .init(outcome: .applied, entitlement: .some(nil), transaction: .succeeded, amountRefunded: 300, detail: "partial refund")),
        Row(name: "a full refund of the period in force ends access", type: "charge.refunded",
            object: charge(refunded: true, amountRefunded: 999), subject: paying("in_2"),
            state: .init(entitlement: entitlement(.active), transaction: transaction("in_2", .succeeded, paidUntil: T.periodEnd)),
            expect: .init(outcome: .applied, entitlement: .refunded, transaction: .refunded, amountRefunded: 999)),
        Row(name: "a full refund of an earlier period leaves the current one", type: "charge.refunded",
            object: charge(refunded: true, amountRefunded: 999), subject: paying("in_1"),
            state: .init(entitlement: entitlement(.active, expires: T.nextPeriodEnd), transaction: transaction("in_1", .succeeded, paidUntil: T.periodEnd)),
            expect: .init(outcome: .applied, entitlement: .some(nil), transaction: .refunded, detail: "earlier period")),
        Row(name: "a refund of a payment not known yet waits for it", type: "charge.refunded",
            object: charge(refunded: true, amountRefunded: 999), subject: paying("pi_1"), expect: .init(unlinked: true)),
        Row(name: "a refund of a payment outside the app is recorded", type: "charge.refunded",
            object: charge(refunded: true, amountRefunded: 999),
            subject: .init(transactionKey: "in_7", invoiceID: "in_7", isKnown: true, paymentIsOutsideTheApp: true),
            expect: .init(outcome: .recorded, transaction: .some(nil), detail: "not the app's")),
        Row(name: "so is a dispute of it", type: "charge.dispute.created",
            object: json(#"{"id":"dp_9","object":"dispute","charge":"ch_9","payment_intent":"pi_9","status":"needs_response"}"#),
            subject: .init(transactionKey: "pi_9", paymentIsOutsideTheApp: true), expect: .init(outcome: .recorded)),
        Row(name: "a lost dispute leaves the payment refunded and the access revoked", type: "charge.dispute.closed",
            object: json(#"{"id":"dp_1","object":"dispute","charge":"ch_1","payment_intent":"pi_1","status":"lost","amount":999,"currency":"usd"}"#),
            subject: paying("pi_1"), state: .init(entitlement: entitlement(.revoked), transaction: transaction("pi_1", .disputed)),
            expect: .init(outcome: .applied, entitlement: .revoked, transaction: .refunded, amountRefunded: 999, detail: "dispute lost")),
        Row(name: "a dispute of the payment in force revokes access", type: "charge.dispute.created",
            object: dispute("needs_response"),
            subject: paying("pi_1"), state: .init(entitlement: entitlement(.active), transaction: transaction("pi_1", .succeeded)),
            expect: .init(outcome: .applied, entitlement: .revoked, transaction: .disputed)),
        Row(name: "an inquiry moves no money and leaves access on", type: "charge.dispute.created",
            object: dispute("warning_needs_response"),
            subject: paying("pi_1"), state: .init(entitlement: entitlement(.active), transaction: transaction("pi_1", .succeeded)),
            expect: .init(outcome: .recorded, entitlement: .some(nil), transaction: .some(nil), detail: "inquiry")),
        Row(name: "an inquiry escalated to a chargeback revokes when its funds are withdrawn", type: "charge.dispute.funds_withdrawn",
            object: dispute("needs_response"),
            subject: paying("pi_1"), state: .init(entitlement: entitlement(.active), transaction: transaction("pi_1", .succeeded)),
            expect: .init(outcome: .applied, entitlement: .revoked, transaction: .disputed)),
        Row(name: "a dispute opening delivered after it was won changes nothing", type: "charge.dispute.created",
            object: dispute("needs_response"), created: T.earlier, subject: paying("pi_1"),
            state: .init(entitlement: entitlement(.active), transaction: transaction("pi_1", .succeeded, at: T.now)),
            expect: .init(outcome: .stale, entitlement: .some(nil), transaction: .some(nil))),
        Row(name: "funds withdrawn arriving after the dispute was won change nothing", type: "charge.dispute.funds_withdrawn",
            object: dispute("needs_response"),
            created: T.earlier, subject: paying("pi_1"),
            state: .init(entitlement: entitlement(.active), transaction: transaction("pi_1", .succeeded, at: T.now)),
            expect: .init(outcome: .stale, entitlement: .some(nil), transaction: .some(nil))),
        Row(name: "a won dispute restores the payment and the access", type: "charge.dispute.closed",
            object: json(#"{"id":"dp_1","object":"dispute","charge":"ch_1","payment_intent":"pi_1","status":"won"}"#), subject: paying("pi_1"),
            state: .init(entitlement: entitlement(.revoked), transaction: transaction("pi_1", .disputed)),
            expect: .init(outcome: .applied, entitlement: .active, transaction: .succeeded, detail: "dispute won")),
        Row(name: "a dispute's other endings are recorded", type: "charge.dispute.closed",
            object: json(#"{"id":"dp_1","object":"dispute","charge":"ch_1","status":"warning_closed"}"#), subject: paying("pi_1"),
            state: .init(entitlement: entitlement(.active), transaction: transaction("pi_1", .succeeded)),
            expect: .init(outcome: .recorded, entitlement: .some(nil), transaction: .some(nil))),
    ]

    @Test(arguments: rows)
    func decide(_ row: Row) throws {
        let event = StripeEvent(
            eventID: 1, id: "evt_1", type: row.type, created: row.created, apiVersion: row.apiVersion, object: row.object,
            previousAttributes: row.previous)
        let e = row.expect
        if e.unlinked {
            #expect(throws: Unlinked.self) { try StripeDecider.decide(event, row.subject, row.state) }
            return
        }
        let decision = try StripeDecider.decide(event, row.subject, row.state)
        if let outcome = e.outcome { #expect(decision.outcome == outcome, "\(decision.detail ?? "")") }
        let entitlement = decision.entitlements.first { $0.entityKey == row.subject.entitlementKey }
        if let status = e.entitlement { #expect(entitlement?.status == status) }
        if let status = e.transaction { #expect(decision.transactions.first?.status == status) }
        if let product = e.productID { #expect(entitlement?.productID == product) }
        if let expiresAt = e.expiresAt { #expect(entitlement?.expiresAt == expiresAt) }
        if let willRenew = e.willRenew { #expect(entitlement?.willRenew == willRenew) }
        if let refunded = e.amountRefunded { #expect(decision.transactions.first?.amountRefunded == refunded) }
        if let amount = e.amount { #expect(decision.transactions.first?.amount == amount) }
        if let companions = e.companions, let key = row.subject.entitlementKey {
            let written = decision.entitlements.filter { $0.entityKey.hasPrefix(key + EntityKey.companionSeparator) }
            #expect(Dictionary(uniqueKeysWithValues: written.map { ($0.productID, $0.status) }) == companions)
            #expect(written.allSatisfy { $0.entityKey == StripeDecider.companionKey(of: key, product: $0.productID) })
        }
        if let detail = e.detail { #expect(decision.detail?.contains(detail) == true, "\(decision.detail ?? "nil")") }
        if let kinds = e.links { #expect(decision.links.map(\.kind) == kinds) }
    }

    @Test func subscriptionStatusesMapAsTransitionsSay() {
        let table: [(String, EntitlementStatus?)] = [
            (#"{"status":"active"}"#, .active), (#"{"status":"active","cancel_at_period_end":true}"#, .cancelled),
            (#"{"status":"active","cancel_at":1751000000}"#, .cancelled), (#"{"status":"trialing"}"#, .trialing),
            (#"{"status":"past_due"}"#, .pastDue), (#"{"status":"unpaid"}"#, .pastDue), (#"{"status":"paused"}"#, .paused),
            (#"{"status":"active","pause_collection":{"behavior":"void"}}"#, .paused),
            (#"{"status":"active","pause_collection":{"behavior":"mark_uncollectible"}}"#, .active),
            (#"{"status":"canceled"}"#, .expired), (#"{"status":"incomplete_expired"}"#, .expired), (#"{"status":"incomplete"}"#, nil),
        ]
        for (object, status) in table {
            #expect(StripeDecider.subscriptionStatus(Self.json(object)) == status, "\(object)")
        }
    }
}

/// Where each object kind keeps its ids, in each API version's shape.
struct StripeObjectKindTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var object: String
        var ids: [ProviderLink.Kind: String]
        var payment: String?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "invoice before basil", object: #"{"id":"in_1","object":"invoice","subscription":"sub_1","payment_intent":"pi_1","charge":"ch_1","customer":"cus_1"}"#,
             ids: [.stripeInvoice: "in_1", .stripeSubscription: "sub_1", .stripePaymentIntent: "pi_1", .stripeCharge: "ch_1", .stripeCustomer: "cus_1"], payment: "in_1"),
        Case(name: "invoice from basil", object: #"{"id":"in_1","object":"invoice","parent":{"type":"subscription_details","subscription_details":{"subscription":"sub_1"}},"customer":"cus_1"}"#,
             ids: [.stripeInvoice: "in_1", .stripeSubscription: "sub_1", .stripeCustomer: "cus_1"], payment: "in_1"),
        Case(name: "PaymentIntent before basil", object: #"{"id":"pi_1","object":"payment_intent","invoice":"in_1","latest_charge":"ch_1"}"#,
             ids: [.stripePaymentIntent: "pi_1", .stripeInvoice: "in_1", .stripeCharge: "ch_1"], payment: "in_1"),
        Case(name: "PaymentIntent from basil", object: #"{"id":"pi_1","object":"payment_intent","latest_charge":"ch_1"}"#,
             ids: [.stripePaymentIntent: "pi_1", .stripeCharge: "ch_1"], payment: "pi_1"),
        Case(name: "PaymentIntent of an app subscription", object: #"{"id":"pi_1","object":"payment_intent","metadata":{"subscription_id":"sub_9"}}"#,
             ids: [.stripePaymentIntent: "pi_1", .stripeSubscription: "sub_9"], payment: "pi_1"),
        Case(name: "Charge before basil", object: #"{"id":"ch_1","object":"charge","payment_intent":"pi_1","invoice":"in_1"}"#,
             ids: [.stripeCharge: "ch_1", .stripePaymentIntent: "pi_1", .stripeInvoice: "in_1"], payment: "in_1"),
        Case(name: "Charge from basil", object: #"{"id":"ch_1","object":"charge","payment_intent":"pi_1"}"#,
             ids: [.stripeCharge: "ch_1", .stripePaymentIntent: "pi_1"], payment: "pi_1"),
        Case(name: "InvoicePayment", object: #"{"id":"inpay_1","object":"invoice_payment","invoice":"in_1","payment":{"type":"payment_intent","payment_intent":"pi_1"}}"#,
             ids: [.stripeInvoice: "in_1", .stripePaymentIntent: "pi_1"], payment: "in_1"),
        Case(name: "InvoicePayment of a charge without PaymentIntent", object: #"{"id":"inpay_1","object":"invoice_payment","invoice":"in_1","payment":{"type":"charge","charge":"ch_1"}}"#,
             ids: [.stripeInvoice: "in_1", .stripeCharge: "ch_1"], payment: "in_1"),
        Case(name: "subscription Checkout Session", object: #"{"id":"cs_1","object":"checkout.session","subscription":"sub_1","invoice":"in_1","payment_intent":null,"customer":"cus_1"}"#,
             ids: [.stripeCheckoutSession: "cs_1", .stripeSubscription: "sub_1", .stripeInvoice: "in_1", .stripeCustomer: "cus_1"], payment: "in_1"),
        Case(name: "payment Checkout Session", object: #"{"id":"cs_1","object":"checkout.session","payment_intent":"pi_1"}"#,
             ids: [.stripeCheckoutSession: "cs_1", .stripePaymentIntent: "pi_1"], payment: "pi_1"),
        Case(name: "dispute", object: #"{"id":"dp_1","object":"dispute","charge":"ch_1","payment_intent":"pi_1"}"#,
             ids: [.stripeCharge: "ch_1", .stripePaymentIntent: "pi_1"], payment: "pi_1"),
    ]

    @Test(arguments: cases)
    func idsInEveryShape(_ c: Case) throws {
        let object = StripeDeciderTests.json(c.object)
        let kind = try #require(StripeObjectKind.of(object))
        #expect(Dictionary(kind.ids(in: object).map { ($0.kind, $0.id) }, uniquingKeysWith: { first, _ in first }) == c.ids)
        #expect(kind.paymentID(in: object) == c.payment)
    }

    @Test func theProductFollowsAPriceChangedInPlaceButNotARenewal() throws {
        let kind = try #require(StripeObjectKind.all.first { $0.name == "subscription" })
        let object = StripeDeciderTests.json(
            #"{"object":"subscription","items":{"data":[{"price":{"id":"price_y","product":"prod_y","metadata":{}}}]},"metadata":{"product_id":"pro.monthly"}}"#)
        let changed = StripeDeciderTests.json(#"{"items":{"data":[{"price":{"id":"price_m"}}]}}"#)
        let renewed = StripeDeciderTests.json(#"{"items":{"data":[{"price":{"id":"price_y"},"current_period_end":1}]}}"#)
        let changedWithMetadata = StripeDeciderTests.json(#"{"items":{"data":[{"price":{"id":"price_m"}}]},"metadata":{"product_id":"pro.old"}}"#)
        #expect(kind.productID(in: object, previousAttributes: changed) == "prod_y")
        #expect(kind.productID(in: object, previousAttributes: renewed) == "pro.monthly")
        #expect(kind.productID(in: object, previousAttributes: changedWithMetadata) == "pro.monthly")
        #expect(kind.productID(in: object, previousAttributes: .null) == "pro.monthly")
    }
}
