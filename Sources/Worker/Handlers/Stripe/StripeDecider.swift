// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// The pure state transitions of Stripe events (TRANSITIONS.md, "Stripe").
///
/// ``StripeEventHandler`` resolves which records an event is about (``Subject``) and loads them
/// (``State``); this type only decides.
enum StripeDecider {
    /// The records an event is about, found from its ids, metadata and the stored links.
    struct Subject: Sendable, Equatable {
        /// The entitlement the event changes or creates.
        var entitlementKey: String?
        /// The transaction the event changes or creates (`provider_transaction_id`).
        var transactionKey: String?
        var userID: String?
        var productID: String?
        /// Another entitlement the event ends (a plan change: `metadata.replaces_subscription`).
        var replacedEntitlementKey: String?
    }

    /// What was loaded for a ``Subject``, under its locks.
    struct State: Sendable {
        var entitlement: EntitlementState?
        var transaction: TransactionState?
        var replaced: EntitlementState?
    }

    static func subscriptionKey(_ id: String) -> String { "stripe:subscription:\(id)" }
    static func paymentKey(_ id: String) -> String { "stripe:payment:\(id)" }

    /// Types that are recorded only (TRANSITIONS.md); unknown types are recorded too.
    static let recordedTypes: Set<String> = [
        "customer.subscription.trial_will_end", "invoice.payment_failed", "invoice.voided",
        "charge.dispute.updated", "charge.dispute.funds_withdrawn",
    ]

    static func decide(_ event: StripeEvent, _ subject: Subject, _ state: State) throws -> Decision {
        let o = event.object
        switch event.type {
        case "payment_intent.succeeded":
            return try purchase(event, subject, state, amount: o["amount_received"].int ?? o["amount"].int, currency: o["currency"].string,
                                expiresAt: nil, trial: false)
        case "payment_intent.processing":
            return try payment(event, subject, state, status: .processing)
        case "payment_intent.payment_failed", "payment_intent.canceled":
            return try payment(event, subject, state, status: .failed)
        case "checkout.session.completed":
            return try checkoutCompleted(event, subject, state)
        case "checkout.session.expired":
            guard state.transaction == nil || state.transaction?.status == .pending else {
                return .recorded("the session's transaction is no longer pending", entityKey: subject.transactionKey)
            }
            return try payment(event, subject, state, status: .failed)
        case "customer.subscription.updated", "customer.subscription.created":
            return try subscription(event, subject, state, status: subscriptionStatus(o))
        case "customer.subscription.deleted":
            return try subscription(event, subject, state, status: .expired)
        case "customer.subscription.paused":
            return try subscription(event, subject, state, status: .paused)
        case "customer.subscription.resumed":
            return try subscription(event, subject, state, status: o["status"].string == "trialing" ? .trialing : .active)
        case "invoice.paid":
            return try invoicePaid(event, subject, state)
        case "charge.refunded":
            guard o["refunded"].bool != false else {
                return .recorded("a partial refund (\(o["amount_refunded"].int ?? 0) of \(o["amount"].int ?? 0))", entityKey: subject.transactionKey)
            }
            return try chargeback(event, subject, state, transactionStatus: .refunded, entitlementStatus: .refunded)
        case "charge.dispute.created":
            return try chargeback(event, subject, state, transactionStatus: .disputed, entitlementStatus: .revoked)
        case "charge.dispute.closed":
            return .recorded("dispute \(o["status"].string ?? "closed")", entityKey: subject.transactionKey)
        case "charge.dispute.funds_reinstated":
            return try reinstated(event, subject, state)
        case "setup_intent.succeeded":
            return try trialSetUp(event, subject, state, succeeded: true)
        case "setup_intent.setup_failed":
            return try trialSetUp(event, subject, state, succeeded: false)
        default:
            return .recorded(recordedTypes.contains(event.type) ? "\(event.type) is recorded only" : "\(event.type) is not handled")
        }
    }

    // MARK: Payments

    /// A payment that succeeded: its transaction, and the entitlement it grants.
    static func purchase(
        _ event: StripeEvent, _ subject: Subject, _ state: State, amount: Int64?, currency: String?, expiresAt: Date?, trial: Bool
    ) throws -> Decision {
        guard let transactionKey = subject.transactionKey else { throw Unlinked(reason: "\(event.type) names no payment") }
        let entitlementKey = try subject.entitlementKey ?? { throw Unlinked(reason: "\(event.type) names no product") }()
        guard let user = subject.userID ?? state.entitlement?.userID else {
            throw Unlinked(reason: "\(event.type) names no user (metadata.user_id or a known customer)")
        }
        guard let productID = subject.productID ?? state.entitlement?.productID else {
            throw Unlinked(reason: "\(event.type) names no product (metadata.product_id)")
        }
        if let stale = staleness(event, state.entitlement, key: entitlementKey) { return stale }
        let isSubscription = entitlementKey.hasPrefix("stripe:subscription:")
        let productType = event.metadata("product_type").flatMap(ProductType.init(rawValue:))
            ?? state.entitlement?.productType ?? (isSubscription ? .autoRenewable : .nonConsumable)

        var transaction = state.transaction ?? TransactionState(source: .webCheckout, providerTransactionID: transactionKey, status: .pending)
        transaction.status = trial ? .pending : .succeeded
        fill(&transaction, user: user, entitlementKey: entitlementKey, productID: productID, productType: productType, event: event)
        transaction.amount = amount ?? transaction.amount
        transaction.currency = currency?.uppercased() ?? transaction.currency

        var entitlement = state.entitlement ?? EntitlementState(
            entityKey: entitlementKey, userID: user, productID: productID, productType: productType, source: .webCheckout, status: .active)
        entitlement.userID = user
        entitlement.productID = productID
        entitlement.email = event.metadata("email") ?? event.object["customer_details.email"].string ?? entitlement.email
        entitlement.purchasedAt = entitlement.purchasedAt ?? event.created
        entitlement.status = trial ? .trialing : (entitlement.willRenew == false && isSubscription ? .cancelled : .active)
        entitlement.isTrial = trial
        if trial { entitlement.trialEndsAt = expiresAt }
        if let expiresAt { entitlement.expiresAt = expiresAt }
        if isSubscription { entitlement.willRenew = entitlement.willRenew ?? true }
        entitlement.lastEventTime = event.created

        var decision = Decision(outcome: .applied, entityKey: entitlementKey, entitlements: [entitlement], transactions: [transaction])
        if var replaced = state.replaced, replaced.entityKey != entitlementKey {
            replaced.status = .expired
            replaced.willRenew = false
            replaced.lastEventTime = max(replaced.lastEventTime ?? event.created, event.created)
            decision.entitlements.append(replaced)
        }
        decision.links = links(event, user: user, entitlementKey: entitlementKey, transactionKey: transactionKey)
        return decision
    }

    /// A payment that did not (yet) succeed: only its transaction moves.
    static func payment(_ event: StripeEvent, _ subject: Subject, _ state: State, status: TransactionStatus) throws -> Decision {
        guard let transactionKey = subject.transactionKey else { throw Unlinked(reason: "\(event.type) names no payment") }
        guard let user = subject.userID ?? state.transaction?.userID else {
            throw Unlinked(reason: "\(event.type) names no user (metadata.user_id or a known customer)")
        }
        if let newest = state.transaction?.lastEventTime, event.created < newest { return .stale(transactionKey, newest: "\(newest)") }
        var transaction = state.transaction ?? TransactionState(source: .webCheckout, providerTransactionID: transactionKey, status: .pending)
        // A later status never goes back to an earlier one (a late `processing` after `succeeded`).
        guard rank(status) >= rank(transaction.status) else {
            return .recorded("\(transaction.status.rawValue) already", entityKey: transactionKey)
        }
        transaction.status = status
        fill(&transaction, user: user, entitlementKey: transaction.entitlementKey ?? subject.entitlementKey, productID: subject.productID,
             productType: event.metadata("product_type").flatMap(ProductType.init(rawValue:)), event: event)
        transaction.amount = event.object["amount"].int ?? event.object["amount_total"].int ?? transaction.amount
        transaction.currency = event.object["currency"].string?.uppercased() ?? transaction.currency
        return Decision(
            outcome: .applied, entityKey: transactionKey, transactions: [transaction],
            links: links(event, user: user, entitlementKey: nil, transactionKey: transactionKey))
    }

    static func checkoutCompleted(_ event: StripeEvent, _ subject: Subject, _ state: State) throws -> Decision {
        let o = event.object
        let subscription = o["subscription"]
        switch o["payment_status"].string {
        case "paid":
            return try purchase(event, subject, state, amount: o["amount_total"].int, currency: o["currency"].string,
                                expiresAt: periodEnd(subscription), trial: false)
        case "no_payment_required" where subscription["status"].string == "trialing" || subscription["trial_end"].date != nil:
            let trialEnd = subscription["trial_end"].date ?? periodEnd(subscription)
            var decision = try purchase(event, subject, state, amount: 0, currency: o["currency"].string, expiresAt: trialEnd, trial: true)
            if let setupIntent = o["setup_intent"].id, let user = decision.entitlements.first?.userID {
                decision.links.append(ProviderLink(
                    .stripeSetupIntent, setupIntent, userID: user, entitlementKey: subject.entitlementKey,
                    transactionKey: subject.transactionKey, account: event.account))
            }
            return decision
        default:
            return try payment(event, subject, state, status: .pending)
        }
    }

    // MARK: Subscriptions

    /// Stripe's subscription status as an entitlement status (`cancel_at_period_end` is `cancelled`).
    static func subscriptionStatus(_ o: JSONValue) -> EntitlementStatus? {
        let cancelling = o["cancel_at_period_end"].bool == true
        switch o["status"].string {
        case "active": return cancelling ? .cancelled : .active
        case "trialing": return cancelling ? .cancelled : .trialing
        case "past_due", "unpaid": return .pastDue
        case "paused": return .paused
        case "canceled", "incomplete_expired": return .expired
        default: return nil  // incomplete: nothing granted yet
        }
    }

    static func subscription(_ event: StripeEvent, _ subject: Subject, _ state: State, status: EntitlementStatus?) throws -> Decision {
        let o = event.object
        guard let key = subject.entitlementKey else { throw Unlinked(reason: "\(event.type) names no subscription") }
        guard let status else { return .recorded("subscription \(o["status"].string ?? "?") grants nothing yet", entityKey: key) }
        guard let user = subject.userID ?? state.entitlement?.userID else {
            throw Unlinked(reason: "subscription \(o["id"].string ?? "?") names no user (metadata.user_id or a known customer)")
        }
        guard let productID = subject.productID ?? state.entitlement?.productID else {
            throw Unlinked(reason: "subscription \(o["id"].string ?? "?") names no product (metadata.product_id)")
        }
        if let stale = staleness(event, state.entitlement, key: key) { return stale }
        var entitlement = state.entitlement ?? EntitlementState(
            entityKey: key, userID: user, productID: productID, productType: .autoRenewable, source: .webCheckout, status: status)
        entitlement.userID = user
        entitlement.status = status
        entitlement.expiresAt = periodEnd(o) ?? entitlement.expiresAt
        let cancelling = o["cancel_at_period_end"].bool == true
        entitlement.willRenew = !(cancelling || status == .expired)
        entitlement.cancelledAt = cancelling ? (o["canceled_at"].date ?? entitlement.cancelledAt ?? event.created) : (status == .expired ? entitlement.cancelledAt ?? o["canceled_at"].date : nil)
        if o["status"].string == "trialing" {
            entitlement.isTrial = true
            entitlement.trialEndsAt = o["trial_end"].date ?? entitlement.trialEndsAt
        } else if o["status"].string == "active" {
            entitlement.isTrial = false
        }
        entitlement.purchasedAt = entitlement.purchasedAt ?? o["start_date"].date ?? event.created
        entitlement.lastEventTime = event.created
        return Decision(
            outcome: .applied, entityKey: key, entitlements: [entitlement],
            links: links(event, user: user, entitlementKey: key, transactionKey: nil))
    }

    /// A renewal or proration: a new succeeded transaction; a renewal extends the period.
    static func invoicePaid(_ event: StripeEvent, _ subject: Subject, _ state: State) throws -> Decision {
        let o = event.object
        guard o["billing_reason"].string != "subscription_create" else {
            return .recorded("the first invoice of a subscription: the purchase is applied from its payment", entityKey: subject.entitlementKey)
        }
        guard let key = subject.entitlementKey, var entitlement = state.entitlement else {
            throw Unlinked(reason: "invoice \(o["id"].string ?? "?") belongs to no known subscription")
        }
        guard let transactionKey = subject.transactionKey else { throw Unlinked(reason: "the invoice has no id") }
        var transaction = state.transaction ?? TransactionState(source: .webCheckout, providerTransactionID: transactionKey, status: .succeeded)
        transaction.status = .succeeded
        fill(&transaction, user: entitlement.userID, entitlementKey: key, productID: entitlement.productID, productType: entitlement.productType, event: event)
        transaction.amount = o["amount_paid"].int ?? transaction.amount
        transaction.currency = o["currency"].string?.uppercased() ?? transaction.currency
        // The period only ever grows, so a late invoice never shortens it; invoices are not stale.
        if o["billing_reason"].string == "subscription_cycle", let end = o["lines.data.0.period.end"].date ?? o["period_end"].date {
            entitlement.expiresAt = max(end, entitlement.expiresAt ?? end)
            if [.pastDue, .gracePeriod].contains(entitlement.status) && (entitlement.lastEventTime ?? .distantPast) <= event.created {
                entitlement.status = .active
            }
        }
        var decision = Decision(outcome: .applied, entityKey: key, entitlements: [entitlement], transactions: [transaction])
        decision.links = links(event, user: entitlement.userID, entitlementKey: key, transactionKey: transactionKey)
        if let intent = o["payment_intent"].id {
            decision.links.append(ProviderLink(.stripePaymentIntent, intent, userID: entitlement.userID, entitlementKey: key, transactionKey: transactionKey, account: event.account))
        }
        if let charge = o["charge"].id {
            decision.links.append(ProviderLink(.stripeCharge, charge, userID: entitlement.userID, entitlementKey: key, transactionKey: transactionKey, account: event.account))
        }
        return decision
    }

    // MARK: Refunds and disputes

    static func chargeback(
        _ event: StripeEvent, _ subject: Subject, _ state: State, transactionStatus: TransactionStatus, entitlementStatus: EntitlementStatus
    ) throws -> Decision {
        guard var transaction = state.transaction else {
            throw Unlinked(reason: "\(event.type) names a payment that is not known yet")
        }
        transaction.status = transactionStatus
        if transactionStatus == .refunded { transaction.refundedAt = transaction.refundedAt ?? event.created }
        transaction.lastEventTime = max(event.created, transaction.lastEventTime ?? event.created)
        var decision = Decision(outcome: .applied, entityKey: transaction.entitlementKey ?? transaction.providerTransactionID, transactions: [transaction])
        if var entitlement = state.entitlement {
            entitlement.status = entitlementStatus
            entitlement.lastEventTime = max(event.created, entitlement.lastEventTime ?? event.created)
            decision.entitlements = [entitlement]
        }
        if let charge = event.object["charge"].id ?? (event.object["object"].string == "charge" ? event.object["id"].string : nil) {
            decision.links.append(ProviderLink(
                .stripeCharge, charge, userID: transaction.userID, entitlementKey: transaction.entitlementKey,
                transactionKey: transaction.providerTransactionID, account: event.account))
        }
        return decision
    }

    static func reinstated(_ event: StripeEvent, _ subject: Subject, _ state: State) throws -> Decision {
        guard var transaction = state.transaction else { throw Unlinked(reason: "the disputed payment is not known") }
        transaction.status = .succeeded
        transaction.lastEventTime = max(event.created, transaction.lastEventTime ?? event.created)
        var decision = Decision(outcome: .applied, entityKey: transaction.entitlementKey, transactions: [transaction])
        if var entitlement = state.entitlement, entitlement.status == .revoked {
            entitlement.status = entitlement.willRenew == false && entitlement.productType == .autoRenewable ? .cancelled
                : entitlement.isTrial ? .trialing : .active
            entitlement.lastEventTime = max(event.created, entitlement.lastEventTime ?? event.created)
            decision.entitlements = [entitlement]
        }
        return decision
    }

    // MARK: Trials

    static func trialSetUp(_ event: StripeEvent, _ subject: Subject, _ state: State, succeeded: Bool) throws -> Decision {
        guard var transaction = state.transaction else {
            throw Unlinked(reason: "setup intent \(event.object["id"].string ?? "?") belongs to no known trial checkout")
        }
        transaction.status = succeeded ? .succeeded : .failed
        transaction.lastEventTime = max(event.created, transaction.lastEventTime ?? event.created)
        var decision = Decision(outcome: .applied, entityKey: transaction.entitlementKey, transactions: [transaction])
        if succeeded, var entitlement = state.entitlement, entitlement.isTrial, Self.isLive(entitlement.status) {
            entitlement.status = .trialing
            entitlement.lastEventTime = max(event.created, entitlement.lastEventTime ?? event.created)
            decision.entitlements = [entitlement]
        }
        return decision
    }

    // MARK: Helpers

    static func isLive(_ status: EntitlementStatus) -> Bool { [.active, .trialing, .cancelled].contains(status) }

    /// `current_period_end` of a subscription (on the item in newer API versions).
    static func periodEnd(_ subscription: JSONValue) -> Date? {
        subscription["current_period_end"].date ?? subscription["items.data.0.current_period_end"].date
    }

    static func staleness(_ event: StripeEvent, _ entitlement: EntitlementState?, key: String) -> Decision? {
        guard let newest = entitlement?.lastEventTime, event.created < newest else { return nil }
        return .stale(key, newest: "\(newest)")
    }

    static func rank(_ status: TransactionStatus) -> Int {
        switch status {
        case .pending: 0
        case .processing: 1
        case .succeeded, .failed: 2
        case .refunded, .disputed: 3
        }
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

    /// The links an event establishes from the ids it carries.
    static func links(_ event: StripeEvent, user: String?, entitlementKey: String?, transactionKey: String?) -> [ProviderLink] {
        let o = event.object
        var links: [ProviderLink] = []
        func add(_ kind: ProviderLink.Kind, _ id: String?, entitlement: String? = entitlementKey, transaction: String? = transactionKey) {
            guard let id else { return }
            links.append(ProviderLink(kind, id, userID: user, entitlementKey: entitlement, transactionKey: transaction, account: event.account))
        }
        add(.stripeCustomer, o["customer"].id, entitlement: nil, transaction: nil)
        switch o["object"].string {
        case "payment_intent":
            add(.stripePaymentIntent, o["id"].string)
            add(.stripeCharge, o["latest_charge"].id)
            if let subscription = event.metadata("subscription_id") { add(.stripeSubscription, subscription, transaction: nil) }
        case "checkout.session":
            add(.stripeCheckoutSession, o["id"].string)
            add(.stripePaymentIntent, o["payment_intent"].id)
            add(.stripeSubscription, o["subscription"].id, transaction: nil)
        case "subscription":
            add(.stripeSubscription, o["id"].string, transaction: nil)
        case "invoice":
            add(.stripeInvoice, o["id"].string)
        default:
            break
        }
        return links
    }
}
