// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// The pure state transitions of Apple notifications and synced StoreKit transactions (TRANSITIONS.md, "Apple").
struct AppleDecider {
    /// A notification or a synced transaction, decoded.
    struct Event: Sendable {
        var eventID: Int64
        /// `notificationType`, or ``AppleNotificationVerifier/storeKitEventType`` for a synced transaction.
        var type: String
        var subtype: String?
        /// Apple `signedDate`: the time that orders events of one `originalTransactionId`.
        var time: Date
        var transaction: AppleTransactionPayload?
        var renewal: AppleRenewalInfoPayload?
    }

    /// The state an event may change, loaded under the entity's lock.
    struct State: Sendable {
        var entitlement: EntitlementState?
        var transaction: TransactionState?
        /// The user the purchase belongs to: `appAccountToken`, a synced `user_id`, or the stored one.
        var userID: String?
    }

    static func entityKey(originalTransactionID: String) -> String { "apple:\(originalTransactionID)" }

    static func decide(_ event: Event, _ state: State) -> Decision {
        guard let tx = event.transaction else {
            return .recorded("\(event.type) carries no transaction")
        }
        let originalID = tx.originalTransactionId ?? tx.transactionId
        let key = entityKey(originalTransactionID: originalID)
        guard let productType = ProductType(appleType: tx.type) ?? state.entitlement?.productType,
              let productID = tx.productId ?? state.entitlement?.productID
        else {
            return .recorded("the transaction names no product or type", entityKey: key)
        }
        if let newest = state.entitlement?.lastEventTime, event.time < newest {
            // The entitlement has moved on; a payment this event reports still belongs in the ledger.
            var stale = Decision.stale(key, newest: "\(newest)")
            if state.transaction == nil, Self.reportsPayment(event.type) {
                var transaction = Self.transaction(from: tx, productType: productType)
                transaction.userID = state.userID ?? state.entitlement?.userID
                transaction.entitlementKey = key
                transaction.lastEventTime = event.time
                stale.transactions = [transaction]
            }
            return stale
        }

        var entitlement = state.entitlement ?? EntitlementState(
            entityKey: key, userID: state.userID, productID: productID, productType: productType, source: .storeKit,
            status: .active)
        entitlement.userID = state.userID ?? entitlement.userID
        entitlement.purchasedAt = entitlement.purchasedAt ?? tx.originalPurchaseDate ?? tx.purchaseDate
        var transaction = state.transaction ?? Self.transaction(from: tx, productType: productType)
        transaction.userID = entitlement.userID
        transaction.entitlementKey = key
        var outcome = EventOutcome.applied
        // A refund or revocation carries the transaction it is about, which may be an earlier
        // period's: it marks that transaction, and ends access only when it is the period in force.
        let aboutItsOwnTransaction = Self.aboutItsOwnTransaction.contains(event.type)
        let inForce = Self.isPeriodInForce(tx, of: state.entitlement)
        // Every other notification carries Apple's newest transaction and renewal info for the
        // subscription: what they say is taken as is, so the newest event alone decides them.
        if productType == .autoRenewable, Self.changesState(event.type), !aboutItsOwnTransaction || state.entitlement == nil {
            entitlement.productID = productID
            if let expires = tx.expiresDate { entitlement.expiresAt = expires }
            if let renewal = event.renewal {
                if let status = renewal.autoRenewStatus { entitlement.willRenew = status != 0 }
                let next = renewal.autoRenewProductId
                entitlement.pendingProductID = next == productID ? nil : next
            }
        }

        switch (event.type, event.subtype) {
        case ("SUBSCRIBED", _), ("ONE_TIME_CHARGE", _), (AppleNotificationVerifier.storeKitEventType, _):
            entitlement.productID = productID
            entitlement.expiresAt = tx.expiresDate
            let isTrial = tx.offerType == 1 && tx.offerDiscountType == "FREE_TRIAL"
            entitlement.isTrial = isTrial
            entitlement.trialEndsAt = isTrial ? tx.expiresDate : nil
            if productType == .autoRenewable {
                entitlement.willRenew = entitlement.willRenew ?? true
                let lapsed = tx.expiresDate.map { $0 <= event.time } ?? false
                entitlement.status = lapsed ? .expired : isTrial ? .trialing : entitlement.willRenew == false ? .cancelled : .active
            } else {
                entitlement.status = .active
            }
            transaction.status = .succeeded
        case ("DID_RENEW", _):
            entitlement.pendingProductID = nil
            entitlement.isTrial = false
            entitlement.willRenew = event.renewal?.autoRenewStatus.map { $0 != 0 } ?? true
            entitlement.status = entitlement.willRenew == false ? .cancelled : .active
            entitlement.gracePeriodExpiresAt = nil
            transaction.status = .succeeded
        case ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED"):
            entitlement.willRenew = false
            entitlement.cancelledAt = event.time
            if Self.isLive(entitlement.status) {
                entitlement.status = Self.status(fromRenewal: event.renewal, at: event.time, willRenew: false) ?? .cancelled
            }
        case ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED"):
            entitlement.willRenew = true
            entitlement.cancelledAt = nil
            if Self.isLive(entitlement.status) {
                entitlement.status = Self.status(fromRenewal: event.renewal, at: event.time, willRenew: true)
                    ?? (entitlement.isTrial ? .trialing : .active)
            }
        case ("DID_CHANGE_RENEWAL_PREF", _), ("RENEWAL_EXTENDED", _):
            // The pending product and the expiry were taken from the renewal and transaction info above.
            if Self.isLive(entitlement.status), let status = Self.status(fromRenewal: event.renewal, at: event.time, willRenew: entitlement.willRenew) {
                entitlement.status = entitlement.isTrial && status == .active ? .trialing : status
            }
        case ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"):
            entitlement.status = .gracePeriod
            entitlement.gracePeriodExpiresAt = event.renewal?.gracePeriodExpiresDate
        case ("DID_FAIL_TO_RENEW", _), ("GRACE_PERIOD_EXPIRED", _):
            entitlement.status = .pastDue
        case ("EXPIRED", _):
            entitlement.status = .expired
            entitlement.willRenew = false
        case ("REFUND", _):
            if inForce { entitlement.status = .refunded }
            transaction.status = .refunded
            transaction.refundedAt = tx.revocationDate ?? event.time
        case ("REFUND_REVERSED", _):
            if inForce { entitlement.status = entitlement.willRenew == false ? .cancelled : .active }
            transaction.status = .succeeded
            transaction.refundedAt = nil
        case ("REVOKE", _):
            if inForce { entitlement.status = .revoked }
        case ("OFFER_REDEEMED", _):
            entitlement.offer = tx.offerIdentifier ?? event.subtype
        default:
            outcome = .recorded
        }
        // A revoked transaction never grants access, whatever the notification says.
        if tx.revocationDate != nil, event.type != "REFUND_REVERSED", inForce {
            entitlement.status = event.type == "REFUND" ? .refunded : (entitlement.status == .refunded ? .refunded : .revoked)
        }
        guard outcome == .applied else {
            return .recorded("\(event.type) changes nothing", entityKey: key)
        }
        entitlement.lastEventTime = event.time
        transaction.lastEventTime = event.time
        var links = [ProviderLink(.appleOriginalTransaction, originalID, userID: entitlement.userID, entitlementKey: key)]
        if event.type == AppleNotificationVerifier.storeKitEventType, let user = state.userID {
            links[0].userID = user
        }
        var decision = Decision(outcome: .applied, entityKey: key, entitlements: [entitlement], transactions: [transaction], links: links)
        if let user = entitlement.userID, state.entitlement != nil, state.entitlement?.userID != user {
            decision.newlyLinkedUsers[key] = user
        }
        return decision
    }

    /// Notifications whose transaction is the one they are about (refunded, revoked), not the
    /// subscription's newest: they never move the expiry back or replace the current product.
    static let aboutItsOwnTransaction: Set<String> = ["REFUND", "REFUND_REVERSED", "REVOKE"]

    /// Whether a transaction paid for the period in force: its expiry is the entitlement's (or
    /// later), or either has none (a one-time purchase, an entitlement not known yet).
    static func isPeriodInForce(_ tx: AppleTransactionPayload, of entitlement: EntitlementState?) -> Bool {
        guard let paidUntil = tx.expiresDate, let expiresAt = entitlement?.expiresAt else { return true }
        return paidUntil >= expiresAt
    }

    /// The notification types that change an entitlement; all others are recorded only.
    static let stateChangingTypes: Set<String> = [
        "SUBSCRIBED", "ONE_TIME_CHARGE", "DID_RENEW", "DID_CHANGE_RENEWAL_STATUS", "DID_CHANGE_RENEWAL_PREF",
        "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "EXPIRED", "REFUND", "REFUND_REVERSED", "REVOKE",
        "RENEWAL_EXTENDED", "OFFER_REDEEMED", AppleNotificationVerifier.storeKitEventType,
    ]

    static func changesState(_ type: String) -> Bool { stateChangingTypes.contains(type) }

    /// A subscription that is still running (not ended, refunded or revoked).
    static func isLive(_ status: EntitlementStatus) -> Bool {
        [.active, .trialing, .gracePeriod, .pastDue, .cancelled].contains(status)
    }

    /// The billing state Apple's renewal info states: in billing retry (grace period until its
    /// end, past due after), auto-renew off, or fine. `nil` without renewal info.
    static func status(fromRenewal renewal: AppleRenewalInfoPayload?, at time: Date, willRenew: Bool?) -> EntitlementStatus? {
        guard let renewal else { return nil }
        if renewal.isInBillingRetryPeriod == true {
            if let grace = renewal.gracePeriodExpiresDate, grace > time { return .gracePeriod }
            return .pastDue
        }
        return willRenew == false ? .cancelled : .active
    }

    /// Whether the event's transaction is a payment (not only a change to a subscription).
    static func reportsPayment(_ type: String) -> Bool {
        ["SUBSCRIBED", "DID_RENEW", "ONE_TIME_CHARGE", AppleNotificationVerifier.storeKitEventType].contains(type)
    }

    /// A new ledger row for an Apple transaction.
    static func transaction(from tx: AppleTransactionPayload, productType: ProductType) -> TransactionState {
        var transaction = TransactionState(source: .storeKit, providerTransactionID: tx.transactionId, status: .succeeded)
        transaction.productID = tx.productId
        transaction.productType = productType
        // Apple prices are milli-units; the ledger keeps minor units (cents).
        transaction.amount = tx.price.map { $0 / 10 }
        transaction.currency = tx.currency
        transaction.purchasedAt = tx.purchaseDate
        return transaction
    }
}
