// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

extension StripeDecider {
    /// `charge.refunded`: a full refund makes the payment `refunded` and revokes the period it paid
    /// for when that period is in force; a partial refund records the amount and changes no status.
    /// Stripe does not deliver in order: a refund's event older than (or as old as, Stripe's
    /// `created` being in seconds) what the payment last heard never lowers `amount_refunded`.
    static func refunded(_ event: StripeEvent, _ subject: Subject, _ state: State) throws -> Decision {
        let o = event.object
        func refundedSoFar(_ transaction: TransactionState) -> Int64? {
            let reported = o.stripeAmount("amount_refunded")
            guard let last = transaction.lastEventTime, event.created <= last, let known = transaction.amountRefunded else {
                return reported ?? transaction.amountRefunded
            }
            return max(reported ?? known, known)
        }
        guard o["refunded"].bool != false else {
            guard var transaction = state.transaction else { return try unknownPayment(event, subject) }
            transaction.amountRefunded = refundedSoFar(transaction)
            transaction.lastEventTime = max(event.created, transaction.lastEventTime ?? event.created)
            var decision = Decision(outcome: .applied, entityKey: transaction.entitlementKey ?? transaction.providerTransactionID, transactions: [transaction])
            decision.detail = "a partial refund (\(o.stripeAmount("amount_refunded") ?? 0) of \(o.stripeAmount("amount") ?? 0))"
            decision.links = links(event, subject, user: transaction.userID, entitlementKey: transaction.entitlementKey,
                                   transactionKey: transaction.providerTransactionID)
            return decision
        }
        var decision = try chargeback(event, subject, state, transactionStatus: .refunded, entitlementStatus: .refunded)
        if var transaction = decision.transactions.first, let before = state.transaction {
            transaction.amountRefunded = o.stripeAmount("amount_refunded") == nil ? transaction.amount : refundedSoFar(before)
            decision.transactions = [transaction]
        }
        return decision
    }

    /// A refund or dispute: the transaction moves, and the entitlement is revoked when the payment
    /// paid for the period in force (``isPeriodInForce(_:of:)``).
    static func chargeback(
        _ event: StripeEvent, _ subject: Subject, _ state: State, transactionStatus: TransactionStatus, entitlementStatus: EntitlementStatus,
        detail: String? = nil
    ) throws -> Decision {
        guard var transaction = state.transaction else { return try unknownPayment(event, subject) }
        transaction.status = transactionStatus
        if transactionStatus == .refunded { transaction.refundedAt = transaction.refundedAt ?? event.created }
        transaction.lastEventTime = max(event.created, transaction.lastEventTime ?? event.created)
        var decision = Decision(outcome: .applied, entityKey: transaction.entitlementKey ?? transaction.providerTransactionID, transactions: [transaction])
        decision.detail = detail
        if var entitlement = state.entitlement {
            if isPeriodInForce(transaction, of: entitlement) {
                entitlement.status = entitlementStatus
                entitlement.lastEventTime = max(event.created, entitlement.lastEventTime ?? event.created)
                decision.entitlements = [entitlement]
            } else {
                decision.detail = [detail, "a payment of an earlier period: the current period keeps its access"]
                    .compactMap { $0 }.joined(separator: "; ")
            }
        }
        decision.links = links(event, subject, user: transaction.userID, entitlementKey: transaction.entitlementKey,
                               transactionKey: transaction.providerTransactionID)
        return decision
    }

    /// A dispute lost (closed `lost`): the issuer's decision is final and the cardholder keeps the
    /// money, so the payment reads `refunded` (`amount_refunded` the disputed amount, at most the
    /// payment's) and the access its chargeback revoked stays off.
    static func disputeLost(_ event: StripeEvent, _ subject: Subject, _ state: State) throws -> Decision {
        var decision = try chargeback(event, subject, state, transactionStatus: .refunded, entitlementStatus: .revoked, detail: "dispute lost")
        if var transaction = decision.transactions.first {
            let disputed = event.object.stripeAmount("amount") ?? transaction.amount
            transaction.amountRefunded = [disputed, transaction.amount].compactMap { $0 }.min()
            decision.transactions = [transaction]
        }
        return decision
    }

    /// Whether a dispute is an inquiry (`warning_needs_response`, `warning_under_review`,
    /// `warning_closed`): the issuer asks about the payment, no funds are withdrawn and access
    /// stays; one that escalates becomes a chargeback (`charge.dispute.funds_withdrawn`).
    static func isInquiry(_ dispute: JSONValue) -> Bool {
        dispute["status"].string?.hasPrefix("warning_") == true
    }

    /// A dispute won (closed `won`, or funds reinstated): the payment counts again, and so does the
    /// access it revoked.
    static func reinstated(_ event: StripeEvent, _ subject: Subject, _ state: State, detail: String) throws -> Decision {
        guard var transaction = state.transaction else { return try unknownPayment(event, subject) }
        if transaction.status == .disputed { transaction.status = .succeeded }
        transaction.lastEventTime = max(event.created, transaction.lastEventTime ?? event.created)
        var decision = Decision(outcome: .applied, entityKey: transaction.entitlementKey, transactions: [transaction], detail: detail)
        if var entitlement = state.entitlement, entitlement.status == .revoked, isPeriodInForce(transaction, of: entitlement) {
            entitlement.status = entitlement.willRenew == false && entitlement.productType == .autoRenewable ? .cancelled
                : entitlement.isTrial ? .trialing : .active
            entitlement.lastEventTime = max(event.created, entitlement.lastEventTime ?? event.created)
            decision.entitlements = [entitlement]
        }
        return decision
    }

    // MARK: Trials

    static func trialSetUp(_ event: StripeEvent, _ subject: Subject, _ state: State, succeeded: Bool) throws -> Decision {
        // A trial subscription made by web checkout links its SetupIntent to its entitlement: the
        // SetupIntent becomes the trial's ledger row, of no amount.
        let trialEntitlement = state.entitlement.flatMap { $0.isTrial ? $0 : nil }
        guard var transaction = state.transaction ?? trialEntitlement.flatMap({ entitlement in
            subject.transactionKey.map { key in
                var started = TransactionState(source: .webCheckout, providerTransactionID: key, status: .pending)
                fill(&started, user: entitlement.userID, entitlementKey: entitlement.entityKey, productID: entitlement.productID,
                     productType: entitlement.productType, event: event)
                started.amount = 0
                started.isTrial = true
                return started
            }
        }) else {
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
}
