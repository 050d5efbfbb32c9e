// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// The pure state transitions of Stripe events (docs/TRANSITIONS.md, "Stripe"; docs/stripe.md).
///
/// ``StripeEventHandler`` resolves which records an event is about (``Subject``) and loads them
/// (``State``); this type only decides. The transitions live in extensions by subject:
/// payments, subscriptions and invoices, refunds and disputes.
enum StripeDecider {
    /// The records an event is about, found from its ids, metadata and the stored links.
    struct Subject: Sendable, Equatable {
        /// Whose state the event may touch; entity keys and links carry it.
        var scope = StripeScope.platformLive
        /// The entitlement the event changes or creates.
        var entitlementKey: String?
        /// The transaction the event changes or creates (`provider_transaction_id`).
        var transactionKey: String?
        var userID: String?
        var productID: String?
        /// Another entitlement the event ends (a plan change: `metadata.replaces_subscription`).
        var replacedEntitlementKey: String?
        /// The invoice a payment belongs to (Stripe Billing): its transaction is the invoice's.
        var invoiceID: String?
        /// Whether the object names the app at all: its metadata, or a link of one of its ids (other
        /// than its customer's) that leads to an entitlement or a user.
        var isKnown = false
        /// Whether the payment was recorded as not the app's (``notTheApps(_:_:)``); loaded only
        /// when no transaction exists for it.
        var paymentIsOutsideTheApp = false
    }

    /// What was loaded for a ``Subject``, under its locks.
    struct State: Sendable {
        var entitlement: EntitlementState?
        var transaction: TransactionState?
        var replaced: EntitlementState?
        /// The subscription's other items' entitlements (``withCompanions(_:_:_:_:)``).
        var companions: [EntitlementState] = []
    }

    /// Types that are recorded only (docs/TRANSITIONS.md); unknown types are recorded too. Their links
    /// are still written, so later events find what they name.
    static let recordedTypes: Set<String> = [
        "customer.subscription.trial_will_end", "invoice.payment_failed", "invoice.voided", "invoice.created",
        "invoice.finalized", "invoice.updated", "invoice.payment_action_required", "invoice.upcoming",
        "payment_intent.created", "payment_intent.requires_action", "charge.succeeded", "charge.updated",
        "charge.dispute.updated", "invoice_payment.created",
    ]

    static func decide(_ event: StripeEvent, _ subject: Subject, _ state: State) throws -> Decision {
        var decision = withCompanions(try transition(event, subject, state), event, subject, state)
        // What an event says about how Stripe's ids belong together holds whatever its outcome.
        if decision.outcome != .applied, decision.links.isEmpty, subject.isKnown {
            decision.links = links(
                event, subject, user: subject.userID ?? state.entitlement?.userID ?? state.transaction?.userID,
                entitlementKey: subject.entitlementKey, transactionKey: subject.transactionKey)
        }
        // Test mode is Sluice's sandbox: its keys and links are apart already (``StripeScope``).
        let environment = PurchaseEnvironment(livemode: event.livemode)
        for index in decision.entitlements.indices { decision.entitlements[index].environment = environment }
        for index in decision.transactions.indices { decision.transactions[index].environment = environment }
        return decision
    }

    private static func transition(_ event: StripeEvent, _ subject: Subject, _ state: State) throws -> Decision {
        let o = event.object
        if event.type.hasPrefix("checkout.session.") && !subject.isKnown { return notTheApps(event, subject) }
        guard let type = StripeEventType(rawValue: event.type) else {
            return .recorded(
                recordedTypes.contains(event.type) ? "\(event.type) is recorded only" : "\(event.type) is not handled",
                entityKey: subject.entitlementKey ?? subject.transactionKey)
        }
        switch type {
        case .paymentIntentSucceeded:
            if subject.invoiceID != nil { return try invoicePayment(event, subject, state, status: .succeeded) }
            guard subject.isKnown else { return notTheApps(event, subject) }
            return try purchase(event, subject, state, amount: o.stripeAmount("amount_received", "amount"), currency: o["currency"].string,
                                expiresAt: nil, trial: false)
        case .paymentIntentProcessing:
            return try paymentMoved(event, subject, state, to: .processing)
        case .paymentIntentPaymentFailed, .paymentIntentCanceled:
            return try paymentMoved(event, subject, state, to: .failed)
        case .invoicePaymentPaid:
            return try invoicePayment(event, subject, state, status: .succeeded)
        case .checkoutSessionCompleted, .checkoutSessionAsyncPaymentSucceeded:
            return try checkoutCompleted(event, subject, state)
        case .checkoutSessionAsyncPaymentFailed:
            return try payment(event, subject, state, status: .failed)
        case .checkoutSessionExpired:
            guard state.transaction == nil || state.transaction?.status == .pending else {
                return .recorded("the session's transaction is no longer pending", entityKey: subject.transactionKey)
            }
            return try payment(event, subject, state, status: .failed)
        case .customerSubscriptionUpdated, .customerSubscriptionCreated:
            return try subscription(event, subject, state, status: subscriptionStatus(o))
        case .customerSubscriptionDeleted:
            return try subscription(event, subject, state, status: .expired)
        case .customerSubscriptionPaused:
            return try subscription(event, subject, state, status: .paused)
        case .customerSubscriptionResumed:
            return try subscription(event, subject, state, status: o["status"].string == "trialing" ? .trialing : .active)
        case .invoicePaid, .invoicePaymentSucceeded:
            return try invoicePaid(event, subject, state)
        case .chargeRefunded:
            return try refunded(event, subject, state)
        case .chargeDisputeCreated, .chargeDisputeFundsWithdrawn:
            if let newest = state.transaction?.lastEventTime, event.created < newest {
                // A dispute opens (and its funds are withdrawn) after the payment's other events: one
                // older than the newest (delivered after the dispute was won) changes nothing.
                return .stale(subject.transactionKey ?? "?", newest: "\(newest)")
            }
            if isInquiry(o) {
                return .recorded("an inquiry (\(o["status"].string ?? "warning")): no funds were withdrawn", entityKey: subject.transactionKey)
            }
            if state.transaction?.status == .refunded {
                // Disputed after a full refund ("credit not processed", the refund not yet seen by
                // the cardholder): it stays refunded, so winning the dispute never makes it paid.
                return .recorded("a dispute of a payment already refunded in full: it stays refunded", entityKey: subject.transactionKey)
            }
            return try chargeback(event, subject, state, transactionStatus: .disputed, entitlementStatus: .revoked)
        case .chargeDisputeClosed:
            switch o["status"].string {
            case "lost":
                return try disputeLost(event, subject, state)
            case "won":
                return try reinstated(event, subject, state, detail: "dispute won")
            default:
                return .recorded("dispute \(o["status"].string ?? "closed")", entityKey: subject.transactionKey)
            }
        case .chargeDisputeFundsReinstated:
            return try reinstated(event, subject, state, detail: "funds reinstated")
        case .setupIntentSucceeded:
            return try trialSetUp(event, subject, state, succeeded: true)
        case .setupIntentSetupFailed:
            return try trialSetUp(event, subject, state, succeeded: false)
        case .accountApplicationDeauthorized:
            // Handled before a subject is looked for (``StripeEventHandler``): the account's links go.
            return .recorded("\(event.type) is applied by forgetting the account's links")
        }
    }

    /// An object that names nothing of the app's and that no link leads to: a payment or
    /// subscription made outside the app. Recorded with why, never retried or dead-lettered; its
    /// payment is marked so that a refund or dispute of it is recorded too.
    static func notTheApps(_ event: StripeEvent, _ subject: Subject) -> Decision {
        var decision = Decision.recorded(
            "\(event.object["object"].string ?? "object") \(event.object["id"].string ?? "?") is not the app's: no metadata "
                + "(user_id, product_id, subscription_id) and no link to a purchase")
        // From basil on, a Billing PaymentIntent arrives without its invoice until
        // `invoice_payment.paid` links it: only an invoice, or a PaymentIntent rendered in a version
        // that would name its invoice, is known not to be the app's payment.
        let provenOutside = event.object["object"].string != "payment_intent" || event.paymentsNameTheirInvoice
        if let payment = subject.transactionKey, provenOutside {
            decision.links = [ProviderLink(.stripeOutsidePayment, payment, account: event.account, scope: subject.scope.prefix)]
        }
        return decision
    }

    /// A refund or dispute of a payment Sluice does not know: recorded when the payment was
    /// recorded as not the app's, otherwise waited for (retried, then dead-lettered).
    static func unknownPayment(_ event: StripeEvent, _ subject: Subject) throws -> Decision {
        guard subject.paymentIsOutsideTheApp else { throw Unlinked(reason: "\(event.type) names a payment that is not known yet") }
        return .recorded("\(event.type) of payment \(subject.transactionKey ?? "?"), which is not the app's")
    }

    // MARK: Helpers

    static func isLive(_ status: EntitlementStatus) -> Bool { [.active, .trialing, .cancelled].contains(status) }

    /// `current_period_end` of a subscription (on its items from `2025-03-31.basil`).
    static func periodEnd(_ subscription: JSONValue) -> Date? {
        subscription["current_period_end"].date ?? subscription["items.data.0.current_period_end"].date
    }

    static func staleness(_ event: StripeEvent, _ entitlement: EntitlementState?, key: String) -> Decision? {
        guard let newest = entitlement?.lastEventTime, event.created < newest else { return nil }
        return .stale(key, newest: "\(newest)")
    }

    /// The order of a payment's statuses, which breaks ties between events of the same second.
    static func rank(_ status: TransactionStatus) -> Int {
        switch status {
        case .pending: 0
        case .processing: 1
        case .failed: 2
        case .succeeded: 3
        case .refunded, .disputed: 4
        }
    }

    /// Whether a payment event of time `eventTime` may move a transaction to `new`: a succeeded
    /// (or refunded, disputed) payment never goes back to pending, processing or failed; otherwise
    /// a newer event wins, and one of the same second only when it moves forward in ``rank(_:)``.
    static func mayMove(_ transaction: TransactionState, to new: TransactionStatus, at eventTime: Date) -> Bool {
        if rank(transaction.status) >= rank(.succeeded) { return rank(new) > rank(transaction.status) }
        guard let newest = transaction.lastEventTime else { return true }
        if eventTime != newest { return eventTime > newest }
        return rank(new) > rank(transaction.status)
    }

    /// Whether a payment paid for the period in force: a refund or dispute of an earlier period
    /// leaves the current period's access alone. Payments that are not a subscription period's,
    /// and entitlements without an expiry, always are.
    static func isPeriodInForce(_ transaction: TransactionState, of entitlement: EntitlementState) -> Bool {
        guard let paidUntil = transaction.periodEnd, let expiresAt = entitlement.expiresAt else { return true }
        return paidUntil >= expiresAt
    }

    static func fill(
        _ transaction: inout TransactionState, user: String?, entitlementKey: String?, productID: String?, productType: ProductType?,
        event: StripeEvent
    ) {
        transaction.userID = user ?? transaction.userID
        transaction.entitlementKey = entitlementKey ?? transaction.entitlementKey
        transaction.productID = productID ?? transaction.productID
        transaction.productType = productType ?? transaction.productType
        transaction.purchasedAt = transaction.purchasedAt ?? event.created
        transaction.lastEventTime = max(event.created, transaction.lastEventTime ?? event.created)
    }

    /// The links an event writes: each id its object carries (``StripeObjectKind/ids(in:)``) to
    /// what it was found to belong to. A customer leads only to its user, a subscription to its
    /// own entitlement; every other id to the event's transaction and entitlement.
    static func links(_ event: StripeEvent, _ subject: Subject, user: String?, entitlementKey: String?, transactionKey: String?) -> [ProviderLink] {
        guard let kind = StripeObjectKind.of(event.object) else { return [] }
        return kind.ids(in: event.object).compactMap { linkKind, id in
            var link = ProviderLink(linkKind, id, userID: user, account: event.account, scope: subject.scope.prefix)
            switch linkKind {
            case .stripeCustomer:
                break
            case .stripeSubscription:
                link.entitlementKey = subject.scope.subscriptionKey(id)
            default:
                link.entitlementKey = entitlementKey
                link.transactionKey = transactionKey
            }
            return link.userID == nil && link.entitlementKey == nil && link.transactionKey == nil ? nil : link
        }
    }
}
