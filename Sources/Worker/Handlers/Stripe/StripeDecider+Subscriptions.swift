// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

extension StripeDecider {
    /// Stripe's subscription status as an entitlement status: `cancel_at_period_end` or `cancel_at`
    /// is `cancelled`, and `pause_collection` with `behavior: void` is `paused`.
    static func subscriptionStatus(_ o: JSONValue) -> EntitlementStatus? {
        let cancelling = o["cancel_at_period_end"].bool == true || o["cancel_at"].date != nil
        let collectionVoided = o["pause_collection.behavior"].string == "void"
        switch o["status"].string {
        case "active": return collectionVoided ? .paused : cancelling ? .cancelled : .active
        case "trialing": return collectionVoided ? .paused : cancelling ? .cancelled : .trialing
        case "past_due", "unpaid": return .pastDue
        case "paused": return .paused
        case "canceled", "incomplete_expired": return .expired
        default: return nil  // incomplete: nothing granted yet
        }
    }

    /// Follows a subscription: status, period, cancellation, trial and the product now subscribed.
    /// A revocation by refund or dispute holds against everything but the subscription's end.
    static func subscription(_ event: StripeEvent, _ subject: Subject, _ state: State, status: EntitlementStatus?) throws -> Decision {
        let o = event.object
        guard let key = subject.entitlementKey else { throw Unlinked(reason: "\(event.type) names no subscription") }
        if state.entitlement == nil && !subject.isKnown { return notTheApps(event, subject) }
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
        var notes: [String] = []
        if entitlement.productID != productID {
            notes.append("product changed from \(entitlement.productID) to \(productID)")
            entitlement.productID = productID
        }
        entitlement.userID = user
        if [.refunded, .revoked].contains(entitlement.status) && status != .expired {
            notes.append("stays \(entitlement.status.rawValue): a refund or dispute of the period in force holds until a newer payment")
        } else {
            entitlement.status = status
        }
        let cancelAt = o["cancel_at"].date
        let cancelling = o["cancel_at_period_end"].bool == true || cancelAt != nil
        let end = periodEnd(o) ?? entitlement.expiresAt
        entitlement.expiresAt = [end, cancelAt].compactMap { $0 }.min()
        entitlement.willRenew = !(cancelling || status == .expired)
        if cancelling {
            entitlement.cancelledAt = o["canceled_at"].date ?? entitlement.cancelledAt ?? event.created
        } else if status != .expired {
            entitlement.cancelledAt = nil
        } else {
            entitlement.cancelledAt = entitlement.cancelledAt ?? o["canceled_at"].date
        }
        if o["status"].string == "trialing" {
            entitlement.isTrial = true
            entitlement.trialEndsAt = o["trial_end"].date ?? entitlement.trialEndsAt
        } else if o["status"].string == "active" {
            entitlement.isTrial = false
        }
        entitlement.purchasedAt = entitlement.purchasedAt ?? o["start_date"].date ?? event.created
        switch status {
        case .pastDue: entitlement.billingIssueDetectedAt = entitlement.billingIssueDetectedAt ?? event.created
        case .active, .trialing, .cancelled: entitlement.billingIssueDetectedAt = nil
        case .expired: entitlement.expirationReason = expirationReason(o)
        default: break
        }
        if status != .expired { entitlement.expirationReason = nil }
        entitlement.lastEventTime = event.created
        var decision = Decision(
            outcome: .applied, entityKey: key, entitlements: [entitlement],
            links: links(event, subject, user: user, entitlementKey: key, transactionKey: nil))
        decision.detail = notes.isEmpty ? nil : notes.joined(separator: "; ")
        return decision
    }

    /// A paid subscription invoice (the first one, a renewal or a proration): its transaction is
    /// `succeeded` and the period it paid for extends the entitlement. Invoices are not stale: the
    /// period only grows, so a late one never shortens it. A newer period's payment ends a billing
    /// problem and a revocation of an earlier period.
    static func invoicePaid(_ event: StripeEvent, _ subject: Subject, _ state: State) throws -> Decision {
        let o = event.object
        let invoice = o["id"].string ?? "?"
        guard let key = subject.entitlementKey, subject.scope.isSubscriptionKey(key) else {
            return .recorded("invoice \(invoice) belongs to no subscription", entityKey: subject.transactionKey)
        }
        guard let transactionKey = subject.transactionKey else { throw Unlinked(reason: "the invoice has no id") }
        if state.entitlement == nil && !subject.isKnown { return notTheApps(event, subject) }
        // A trial's first invoice bills $0 of $0; one paid in full by a coupon bills $0 of more and
        // is a payment of 0 like a $0 renewal: it enters the ledger and extends the period.
        let reason = StripeBillingReason(invoice: o)
        if reason == .subscriptionCreate, o["amount_paid"].int == 0, (o["subtotal"].int ?? 0) == 0 {
            return .recorded("the $0 first invoice of a trial: the trial is applied from its checkout and card setup", entityKey: key)
        }
        let paidUntil = invoicePeriodEnd(o)
        var entitlement: EntitlementState
        if let existing = state.entitlement {
            entitlement = existing
        } else {
            guard let user = subject.userID, let product = subject.productID else {
                throw Unlinked(reason: "invoice \(invoice) belongs to a subscription that names no user or product yet")
            }
            entitlement = EntitlementState(
                entityKey: key, userID: user, productID: product, productType: .autoRenewable, source: .webCheckout, status: .active)
            entitlement.willRenew = true
            entitlement.purchasedAt = event.created
            entitlement.email = o["customer_email"].string
        }

        var transaction = state.transaction ?? TransactionState(source: .webCheckout, providerTransactionID: transactionKey, status: .pending)
        let settledOtherwise = rank(transaction.status) > rank(.succeeded)
        if !settledOtherwise { transaction.status = .succeeded }
        fill(&transaction, user: entitlement.userID, entitlementKey: key, productID: entitlement.productID,
             productType: entitlement.productType, event: event)
        transaction.amount = o.stripeAmount("amount_paid") ?? transaction.amount
        transaction.currency = o["currency"].string?.uppercased() ?? transaction.currency
        transaction.periodEnd = paidUntil ?? transaction.periodEnd

        let previousEnd = entitlement.expiresAt
        if let paidUntil { entitlement.expiresAt = max(paidUntil, previousEnd ?? paidUntil) }
        let newerPeriod = paidUntil.map { end in previousEnd.map { end > $0 } ?? true } ?? false
        if newerPeriod { entitlement.billingIssueDetectedAt = nil }
        if [.pastDue, .gracePeriod].contains(entitlement.status) && (entitlement.lastEventTime ?? .distantPast) <= event.created {
            entitlement.status = .active
            entitlement.billingIssueDetectedAt = nil
        } else if [.refunded, .revoked].contains(entitlement.status), !settledOtherwise, newerPeriod {
            entitlement.status = entitlement.willRenew == false ? .cancelled : .active
        }
        var decision = Decision(
            outcome: .applied, entityKey: key, entitlements: [entitlement], transactions: [transaction],
            links: links(event, subject, user: entitlement.userID, entitlementKey: key, transactionKey: transactionKey))
        // The subscription's first invoice, or a plan change's, is the customer's purchase however
        // the events came (`customer.subscription.created` before it made the entitlement); a
        // cycle's is a renewal.
        if let reason { decision.renews[transactionKey] = reason.renews }
        return decision
    }

    /// Why a subscription ended: its `cancellation_details.reason`.
    static func expirationReason(_ subscription: JSONValue) -> ExpirationReason {
        switch subscription["cancellation_details.reason"].string {
        case "cancellation_requested": .voluntary
        case "payment_failed": .billingError
        case "payment_disputed": .disputed
        default: .other
        }
    }

    /// The latest end of the invoice's line periods: the period a subscription invoice paid for.
    /// (The invoice's own `period_end` is the end of the previous period for a renewal.)
    static func invoicePeriodEnd(_ invoice: JSONValue) -> Date? {
        guard case .array(let lines) = invoice["lines.data"] else { return nil }
        return lines.compactMap { $0["period.end"].date }.max()
    }
}
