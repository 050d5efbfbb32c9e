// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

extension StripeDecider {
    /// A payment that succeeded: its transaction, and the entitlement it grants.
    ///
    /// The transaction moves even when the entitlement has newer events (a late Checkout event):
    /// a payment that succeeded is a fact of the ledger whatever the entitlement's order.
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
        if let settled = state.transaction, rank(settled.status) > rank(.succeeded) {
            return .recorded("the payment is \(settled.status.rawValue) already", entityKey: entitlementKey)
        }
        let isSubscription = subject.scope.isSubscriptionKey(entitlementKey)
        let productType = event.metadata("product_type").flatMap(ProductType.init(rawValue:))
            ?? state.entitlement?.productType ?? (isSubscription ? .autoRenewable : .nonConsumable)

        var transaction = state.transaction ?? TransactionState(source: .webCheckout, providerTransactionID: transactionKey, status: .pending)
        if !trial {
            transaction.status = .succeeded
        } else if transaction.status != .succeeded {
            // The trial's row, of no amount, until its card is saved; a row already paid stays a payment.
            transaction.isTrial = true
        }
        fill(&transaction, user: user, entitlementKey: entitlementKey, productID: productID, productType: productType, event: event)
        transaction.amount = amount ?? transaction.amount
        transaction.currency = currency?.uppercased() ?? transaction.currency
        if isSubscription, let expiresAt { transaction.periodEnd = transaction.periodEnd ?? expiresAt }
        var decision = Decision(outcome: .applied, entityKey: entitlementKey, transactions: [transaction])
        // A checkout's payment, or the app's own, is the customer's purchase, whichever event about
        // the subscription made its entitlement first.
        decision.renews[transactionKey] = false
        decision.links = links(event, subject, user: user, entitlementKey: entitlementKey, transactionKey: transactionKey)
        if staleness(event, state.entitlement, key: entitlementKey) != nil {
            decision.detail = "the entitlement has newer events and is left as they set it"
            return decision
        }

        var entitlement = state.entitlement ?? EntitlementState(
            entityKey: entitlementKey, userID: user, productID: productID, productType: productType, source: .webCheckout, status: .active)
        entitlement.userID = user
        entitlement.productID = productID
        entitlement.email = event.metadata("email") ?? event.object["customer_details.email"].string ?? entitlement.email
        entitlement.purchasedAt = entitlement.purchasedAt ?? event.created
        entitlement.status = trial ? .trialing : (entitlement.willRenew == false && isSubscription ? .cancelled : .active)
        entitlement.isTrial = trial
        if trial { entitlement.trialEndsAt = expiresAt }
        if let expiresAt { entitlement.expiresAt = max(expiresAt, entitlement.expiresAt ?? expiresAt) }
        if isSubscription { entitlement.willRenew = entitlement.willRenew ?? true }
        entitlement.lastEventTime = event.created
        decision.entitlements = [entitlement]

        if var replaced = state.replaced, replaced.entityKey != entitlementKey {
            replaced.status = .expired
            replaced.willRenew = false
            replaced.lastEventTime = max(replaced.lastEventTime ?? event.created, event.created)
            decision.entitlements.append(replaced)
        }
        return decision
    }

    /// A PaymentIntent that moved without succeeding: through its invoice when it is a Billing
    /// payment, as a payment of the app's when it names one, and recorded otherwise.
    static func paymentMoved(_ event: StripeEvent, _ subject: Subject, _ state: State, to status: TransactionStatus) throws -> Decision {
        if subject.invoiceID != nil { return try invoicePayment(event, subject, state, status: status) }
        guard subject.isKnown else { return notTheApps(event, subject) }
        return try payment(event, subject, state, status: status)
    }

    /// A payment that did not (yet) succeed: only its transaction moves (``mayMove(_:to:at:)``).
    static func payment(_ event: StripeEvent, _ subject: Subject, _ state: State, status: TransactionStatus) throws -> Decision {
        guard let transactionKey = subject.transactionKey else { throw Unlinked(reason: "\(event.type) names no payment") }
        guard let user = subject.userID ?? state.transaction?.userID else {
            throw Unlinked(reason: "\(event.type) names no user (metadata.user_id or a known customer)")
        }
        var transaction = state.transaction ?? TransactionState(source: .webCheckout, providerTransactionID: transactionKey, status: .pending)
        if state.transaction != nil, !mayMove(transaction, to: status, at: event.created) {
            if let newest = transaction.lastEventTime, event.created < newest, rank(transaction.status) < rank(.succeeded) {
                return .stale(transactionKey, newest: "\(newest)")
            }
            return .recorded("\(transaction.status.rawValue) already", entityKey: transactionKey)
        }
        transaction.status = status
        fill(&transaction, user: user, entitlementKey: transaction.entitlementKey ?? subject.entitlementKey, productID: subject.productID,
             productType: event.metadata("product_type").flatMap(ProductType.init(rawValue:)), event: event)
        transaction.amount = event.object.stripeAmount("amount", "amount_total") ?? transaction.amount
        transaction.currency = event.object["currency"].string?.uppercased() ?? transaction.currency
        return Decision(
            outcome: .applied, entityKey: transactionKey, transactions: [transaction],
            links: links(event, subject, user: user, entitlementKey: nil, transactionKey: transactionKey))
    }

    /// A payment of a subscription invoice (a Billing PaymentIntent, or an InvoicePayment): the
    /// invoice's transaction moves; the entitlement is the invoice's and subscription's business.
    /// While the invoice is unknown, only the links are written, so its events and later refunds
    /// find this payment.
    static func invoicePayment(_ event: StripeEvent, _ subject: Subject, _ state: State, status: TransactionStatus) throws -> Decision {
        let o = event.object
        guard let transactionKey = subject.transactionKey else { throw Unlinked(reason: "\(event.type) names no invoice") }
        let user = subject.userID ?? state.entitlement?.userID ?? state.transaction?.userID
        let entitlementKey = subject.entitlementKey ?? state.transaction?.entitlementKey
        var decision = Decision.recorded("the payment of invoice \(transactionKey), which is not known yet", entityKey: transactionKey)
        decision.links = links(event, subject, user: user, entitlementKey: entitlementKey, transactionKey: transactionKey)
        guard entitlementKey != nil || state.transaction != nil else { return decision }

        var transaction = state.transaction ?? TransactionState(source: .webCheckout, providerTransactionID: transactionKey, status: .pending)
        guard state.transaction == nil || mayMove(transaction, to: status, at: event.created) else {
            decision.detail = "\(transaction.status.rawValue) already"
            return decision
        }
        transaction.status = status
        fill(&transaction, user: user, entitlementKey: entitlementKey, productID: state.entitlement?.productID,
             productType: state.entitlement?.productType, event: event)
        if status == .succeeded {
            transaction.amount = o.stripeAmount("amount_paid", "amount_received") ?? transaction.amount
        }
        transaction.amount = transaction.amount ?? o.stripeAmount("amount_requested", "amount")
        transaction.currency = transaction.currency ?? o["currency"].string?.uppercased()
        decision.outcome = .applied
        decision.detail = nil
        decision.transactions = [transaction]
        return decision
    }

    static func checkoutCompleted(_ event: StripeEvent, _ subject: Subject, _ state: State) throws -> Decision {
        let o = event.object
        let subscription = o["subscription"]
        switch o["payment_status"].string {
        case "paid":
            return try purchase(event, subject, state, amount: o.stripeAmount("amount_total"), currency: o["currency"].string,
                                expiresAt: periodEnd(subscription), trial: false)
        case "no_payment_required" where subscription["status"].string == "trialing" || subscription["trial_end"].date != nil:
            let trialEnd = subscription["trial_end"].date ?? periodEnd(subscription)
            return try purchase(event, subject, state, amount: 0, currency: o["currency"].string, expiresAt: trialEnd, trial: true)
        default:
            return try payment(event, subject, state, status: .pending)
        }
    }
}
