// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// The pure state transitions of Apple notifications and synced StoreKit transactions (docs/TRANSITIONS.md, "Apple").
///
/// Each notification changes only what it is about: the transaction it carries (all of it when it
/// is the subscription's newest, only that transaction's ledger row and, when it paid for the
/// period in force, the access it grants, for a refund or revocation), and the subscription's
/// renewal fields from its renewal info when that is newer than what they came from.
struct AppleDecider {
    /// A notification or a synced transaction, decoded.
    struct Event: Sendable {
        var eventID: Int64
        /// `notificationType`, or Sluice's own type for a synced transaction or a reconciled status.
        var type: AppleNotificationType
        /// `subtype`; a reconciled status's name (``AppleSubscriptionStatus/name``) for ``AppleNotificationType/subscriptionStatus``.
        var subtype: AppleSubtype?
        /// Apple `signedDate`: the time that orders events of one `originalTransactionId`.
        var time: Date
        var environment: PurchaseEnvironment
        var transaction: AppleTransactionPayload?
        var renewal: AppleRenewalInfoPayload?
        /// `CONSUMPTION_REQUEST`'s `consumptionRequestReason`.
        var consumptionRequestReason: String?
        /// A synced transaction found through a StoreKit 1 receipt, whose signature nothing
        /// checked: it never moves a purchase from the user who holds it (AppleEventHandler).
        var viaReceipt = false

        var isSync: Bool { type == .storeKitTransaction }
    }

    /// The state an event may change, loaded under the entity's lock.
    struct State: Sendable {
        var entitlement: EntitlementState?
        var transaction: TransactionState?
        /// The user the purchase belongs to: the signed `appAccountToken`, else a synced `user_id`,
        /// else the linked or stored one.
        var userID: String?
    }

    /// The purchase's entity key (``EntityKey/apple(originalTransactionID:environment:)``).
    static func entityKey(originalTransactionID: String, environment: PurchaseEnvironment) -> String {
        EntityKey.apple(originalTransactionID: originalTransactionID, environment: environment).text
    }

    /// The scope of an `originalTransactionId`'s link (``ProviderLink/scope``).
    static func linkScope(_ environment: PurchaseEnvironment) -> String {
        environment == .sandbox ? "sandbox:" : ""
    }

    static func decide(_ event: Event, _ state: State) -> Decision {
        guard let tx = event.transaction else {
            return .recorded("\(event.type) carries no transaction")
        }
        let originalID = tx.originalTransactionId ?? tx.transactionId
        let key = entityKey(originalTransactionID: originalID, environment: event.environment)
        guard let productType = ProductType(appleType: tx.type) ?? state.entitlement?.productType,
              let productID = tx.productId ?? state.entitlement?.productID
        else {
            return .recorded("the transaction names no product or type", entityKey: key)
        }
        if let newest = state.entitlement?.lastEventTime, event.time.millisecondsSince1970 < newest.millisecondsSince1970 {
            return stale(event, state, key: key, productType: productType, newest: newest)
        }

        var entitlement = state.entitlement ?? EntitlementState(
            entityKey: key, userID: state.userID, productID: productID, productType: productType, source: .storeKit,
            environment: event.environment, status: .active)
        entitlement.userID = state.userID ?? entitlement.userID
        entitlement.purchasedAt = entitlement.purchasedAt ?? tx.originalPurchaseDate ?? tx.purchaseDate
        if productType != .autoRenewable { entitlement.willRenew = false }
        var transaction = ledgerRow(for: tx, event: event, state: state, productType: productType)
        transaction.userID = entitlement.userID
        transaction.entitlementKey = key

        // A refund or revocation carries the transaction it is about, which may be an earlier
        // period's; a sync carries whichever transaction the device had. They end or restore
        // access only when that transaction is the period in force, and move the subscription on
        // only when it is newer than the period in force.
        let inForce = isPeriodInForce(tx, of: state.entitlement)
        let takesTransaction = state.entitlement == nil
            || (event.isSync ? extendsPeriod(tx, of: entitlement) : changesState(event.type) && !aboutItsOwnTransaction.contains(event.type))
        if takesTransaction {
            take(tx, productID: productID, into: &entitlement)
        }
        let renewalTaken = takeRenewal(event, into: &entitlement)

        var outcome = EventOutcome.applied
        switch (event.type, event.subtype) {
        case (.subscribed, _), (.oneTimeCharge, _):
            grant(tx, at: event.time, willRenew: renewalTaken ? entitlement.willRenew ?? true : true, to: &entitlement)
        case (.storeKitTransaction, _):
            if takesTransaction {
                grant(tx, at: event.time, willRenew: entitlement.willRenew ?? true, to: &entitlement)
            }
        case (.didRenew, _):
            entitlement.pendingProductID = renewalTaken ? entitlement.pendingProductID : nil
            // A renewal into a free promotional period is a trial again.
            entitlement.isTrial = tx.isFreeTrial
            entitlement.trialEndsAt = entitlement.isTrial ? tx.expiresDate : nil
            entitlement.willRenew = renewalTaken ? entitlement.willRenew ?? true : true
            entitlement.status = entitlement.willRenew == false ? .cancelled : entitlement.isTrial ? .trialing : .active
            entitlement.gracePeriodExpiresAt = nil
            entitlement.billingIssueDetectedAt = nil
            entitlement.expirationReason = nil
        case (.didChangeRenewalStatus, .autoRenewDisabled):
            entitlement.willRenew = false
            entitlement.cancelledAt = entitlement.cancelledAt ?? event.time
            if isLive(entitlement.status) {
                entitlement.status = status(fromRenewal: event.renewal, at: event.time, willRenew: false) ?? .cancelled
            }
        case (.didChangeRenewalStatus, .autoRenewEnabled):
            entitlement.willRenew = true
            entitlement.cancelledAt = nil
            if isLive(entitlement.status) {
                entitlement.status = status(fromRenewal: event.renewal, at: event.time, willRenew: true)
                    ?? (entitlement.isTrial ? .trialing : .active)
            }
        case (.didChangeRenewalPref, .upgrade):
            // An upgrade takes effect at once: the notification carries the new transaction, a new
            // period on the higher product (taken above), paid now.
            grant(tx, at: event.time, willRenew: entitlement.willRenew ?? true, to: &entitlement)
        case (.didChangeRenewalPref, _), (.renewalExtended, _):
            // A downgrade waits for the renewal: only the product it renews into changes.
            // The pending product and the expiry were taken from the renewal and transaction info above.
            if isLive(entitlement.status), let status = status(fromRenewal: event.renewal, at: event.time, willRenew: entitlement.willRenew) {
                entitlement.status = entitlement.isTrial && status == .active ? .trialing : status
            }
        case (.didFailToRenew, .gracePeriod):
            entitlement.status = .gracePeriod
            entitlement.gracePeriodExpiresAt = event.renewal?.gracePeriodExpiresDate ?? entitlement.gracePeriodExpiresAt
            entitlement.billingIssueDetectedAt = entitlement.billingIssueDetectedAt ?? event.time
        case (.didFailToRenew, _), (.gracePeriodExpired, _):
            entitlement.status = .pastDue
            entitlement.billingIssueDetectedAt = entitlement.billingIssueDetectedAt ?? event.time
        case (.expired, let subtype):
            entitlement.status = .expired
            entitlement.willRenew = false
            entitlement.expirationReason = subtype.flatMap(expirationReason(subtype:)) ?? entitlement.expirationReason ?? .other
        case (.refund, _):
            if inForce { entitlement.status = .refunded }
            recordRefund(event.type, of: tx, at: event.time, in: &transaction)
        case (.refundReversed, _):
            if inForce { entitlement.status = entitlement.willRenew == false ? .cancelled : .active }
            recordRefund(event.type, of: tx, at: event.time, in: &transaction)
        case (.revoke, _):
            if inForce { entitlement.status = .revoked }
        case (.offerRedeemed, _):
            let offer = tx.offerIdentifier.map { (type: tx.offerType, id: Optional($0)) }
                ?? event.renewal.map { (type: $0.offerType, id: $0.offerIdentifier) }
            entitlement.offer = offer?.id ?? event.subtype?.rawValue
            entitlement.offerType = offer?.type.flatMap(offerTypeName) ?? entitlement.offerType
        case (.subscriptionStatus, let status):
            // Reconciliation: Apple's answer now, about the subscription's latest transaction.
            switch status.flatMap({ AppleSubscriptionStatus(name: $0.rawValue) }) {
            case .active:
                grant(tx, at: event.time, willRenew: entitlement.willRenew ?? true, to: &entitlement)
            case .expired:
                entitlement.status = .expired
                entitlement.willRenew = false
                entitlement.expirationReason = entitlement.expirationReason ?? .other
            case .billingRetry:
                entitlement.status = .pastDue
                entitlement.billingIssueDetectedAt = entitlement.billingIssueDetectedAt ?? event.time
            case .billingGracePeriod:
                entitlement.status = .gracePeriod
                entitlement.billingIssueDetectedAt = entitlement.billingIssueDetectedAt ?? event.time
            case .revoked, nil:
                entitlement.status = .revoked
            }
        case (.priceIncrease, let subtype):
            entitlement.priceIncreaseStatus = subtype == .accepted ? .accepted : subtype == .pending ? .pending : entitlement.priceIncreaseStatus
        default:
            outcome = .recorded
        }
        // A revoked transaction never grants access, whatever the notification says.
        if tx.revocationDate != nil, event.type != .refundReversed, inForce {
            let refunded = event.type == .refund || entitlement.status == .refunded || (event.isSync && tx.inAppOwnershipType != "FAMILY_SHARED")
            entitlement.status = refunded ? .refunded : .revoked
        }
        guard outcome == .applied else {
            return .recorded("\(event.type) changes nothing", entityKey: key)
        }
        entitlement.lastEventTime = event.time
        transaction.lastEventTime = max(transaction.lastEventTime ?? event.time, event.time)
        var decision = Decision(
            outcome: .applied, entityKey: key, entitlements: [entitlement], transactions: [transaction],
            links: [link(originalID, to: entitlement, environment: event.environment)])
        if let user = entitlement.userID, state.entitlement != nil, state.entitlement?.userID != user {
            decision.newlyLinkedUsers[key] = user
        }
        return decision
    }

    /// What a `REFUND` or `REFUND_REVERSED` does to the ledger row of the transaction it is about.
    private static func recordRefund(_ type: AppleNotificationType, of tx: AppleTransactionPayload, at time: Date, in transaction: inout TransactionState) {
        switch type {
        case .refund:
            transaction.status = .refunded
            transaction.refundedAt = tx.revocationDate ?? time
            transaction.amountRefunded = TransactionState.appleRefundedAmount(of: tx, amount: transaction.amount)
        case .refundReversed:
            transaction.status = .succeeded
            transaction.refundedAt = nil
            transaction.amountRefunded = nil
        default:
            break
        }
    }

    /// An event older than the entitlement's newest changes nothing of it, with three exceptions:
    /// the payment it reports still belongs in the ledger; a refund (or its reversal) still
    /// moves the ledger row of the transaction it is about when it is newer than that row's own
    /// news (a refund of an earlier period delivered after the renewal that followed it: its
    /// currency grant is then taken back); and the user it names is linked (a late StoreKit sync
    /// links its user however old its transaction's signature).
    private static func stale(_ event: Event, _ state: State, key: String, productType: ProductType, newest: Date) -> Decision {
        var decision = Decision.stale(key, newest: "\(newest)")
        guard let tx = event.transaction else { return decision }
        let user = state.userID ?? state.entitlement?.userID
        if state.transaction == nil, reportsPayment(event.type) {
            var transaction = ledgerRow(for: tx, event: event, state: state, productType: productType)
            transaction.userID = user
            transaction.entitlementKey = key
            transaction.lastEventTime = event.time
            decision.transactions = [transaction]
        } else if [.refund, .refundReversed].contains(event.type),
                  state.transaction?.lastEventTime.map({ event.time.millisecondsSince1970 >= $0.millisecondsSince1970 }) ?? true {
            // Its row, or a new one when the purchase's own notification never came (a renewal's
            // did): made refunded now, so a late copy of the purchase finds it and grants nothing.
            var transaction = ledgerRow(for: tx, event: event, state: state, productType: productType)
            if state.transaction == nil {
                transaction.userID = user
                transaction.entitlementKey = key
            }
            recordRefund(event.type, of: tx, at: event.time, in: &transaction)
            transaction.lastEventTime = event.time
            decision.transactions = [transaction]
        }
        if let user, var entitlement = state.entitlement, entitlement.userID != user {
            entitlement.userID = user
            decision.entitlements = [entitlement]
            decision.links = [link(tx.originalTransactionId ?? tx.transactionId, to: entitlement, environment: event.environment)]
            decision.newlyLinkedUsers[key] = user
            decision.detail = (decision.detail ?? "") + "; linked the user"
        }
        return decision
    }

    /// The link from an `originalTransactionId` to its entitlement and user.
    private static func link(_ originalID: String, to entitlement: EntitlementState, environment: PurchaseEnvironment) -> ProviderLink {
        ProviderLink(
            .appleOriginalTransaction, originalID, userID: entitlement.userID, entitlementKey: entitlement.entityKey,
            scope: linkScope(environment))
    }

    /// Access granted by a purchase or a renewal the server had not heard of (`SUBSCRIBED`,
    /// `ONE_TIME_CHARGE`, a synced transaction): active, trialing for a free trial,
    /// cancelled when auto-renew is off, expired when the period is already over.
    private static func grant(_ tx: AppleTransactionPayload, at time: Date, willRenew: Bool?, to entitlement: inout EntitlementState) {
        let isTrial = tx.isFreeTrial
        entitlement.isTrial = isTrial
        entitlement.trialEndsAt = isTrial ? tx.expiresDate : nil
        guard entitlement.productType == .autoRenewable else {
            entitlement.status = .active
            return
        }
        entitlement.willRenew = willRenew
        if willRenew != false { entitlement.cancelledAt = nil }
        let lapsed = tx.expiresDate.map { $0 <= time } ?? false
        entitlement.status = lapsed ? .expired : isTrial ? .trialing : willRenew == false ? .cancelled : .active
        if !lapsed {
            entitlement.expirationReason = nil
            entitlement.billingIssueDetectedAt = nil
        }
    }

    /// The ledger row of the event's transaction: created, or moved on by a re-signed copy (a sync
    /// after a refund carries its `revocationDate`).
    private static func ledgerRow(
        for tx: AppleTransactionPayload, event: Event, state: State, productType: ProductType
    ) -> TransactionState {
        var transaction = state.transaction ?? Self.transaction(from: tx, productType: productType, environment: event.environment)
        let newer = transaction.lastEventTime.map { event.time.millisecondsSince1970 >= $0.millisecondsSince1970 } ?? true
        if reportsPayment(event.type), newer {
            transaction.takeRevocation(of: tx)
        } else if newer, tx.revocationDate != nil, transaction.status == .succeeded, !aboutItsOwnTransaction.contains(event.type),
                  tx.inAppOwnershipType != "FAMILY_SHARED" {
            // Any later signed copy of a refunded transaction (an auto-renew change, an expiry)
            // refunds its row: the REFUND itself, delivered after it, is then stale. A family
            // member's copy revoked by Family Sharing is no refund.
            transaction.takeRevocation(of: tx)
        }
        return transaction
    }

    /// Notifications whose transaction is the one they are about (refunded, revoked), not the
    /// subscription's newest: they never move the expiry back or replace the current product.
    static let aboutItsOwnTransaction: Set<AppleNotificationType> = [.refund, .refundReversed, .revoke]

    /// Whether a transaction paid for the period in force: its expiry is the entitlement's (or
    /// later), or either has none (a one-time purchase, an entitlement not known yet).
    static func isPeriodInForce(_ tx: AppleTransactionPayload, of entitlement: EntitlementState?) -> Bool {
        guard let paidUntil = tx.expiresDate, let expiresAt = entitlement?.expiresAt else { return true }
        return paidUntil.millisecondsSince1970 >= expiresAt.millisecondsSince1970
    }

    /// Whether a transaction pays for a period after the one in force (a renewal or upgrade the
    /// server had not heard of).
    static func extendsPeriod(_ tx: AppleTransactionPayload, of entitlement: EntitlementState) -> Bool {
        guard let paidUntil = tx.expiresDate else { return false }
        return entitlement.expiresAt.map { paidUntil.millisecondsSince1970 > $0.millisecondsSince1970 } ?? true
    }

    /// The notification types that change an entitlement; all others are recorded only.
    static let stateChangingTypes: Set<AppleNotificationType> = [
        .subscribed, .oneTimeCharge, .didRenew, .didChangeRenewalStatus, .didChangeRenewalPref, .didFailToRenew,
        .gracePeriodExpired, .expired, .refund, .refundReversed, .revoke, .renewalExtended, .offerRedeemed, .priceIncrease,
        .storeKitTransaction, .subscriptionStatus,
    ]

    static func changesState(_ type: AppleNotificationType) -> Bool { stateChangingTypes.contains(type) }

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
    static func reportsPayment(_ type: AppleNotificationType) -> Bool {
        [.subscribed, .didRenew, .oneTimeCharge, .storeKitTransaction, .subscriptionStatus].contains(type)
    }

    /// A new ledger row for an Apple transaction (``TransactionState/init(apple:productType:environment:)``),
    /// as paid: its refund is the notification's to record.
    static func transaction(from tx: AppleTransactionPayload, productType: ProductType, environment: PurchaseEnvironment) -> TransactionState {
        var transaction = TransactionState(apple: tx, productType: productType, environment: environment)
        transaction.status = .succeeded
        transaction.refundedAt = nil
        transaction.amountRefunded = nil
        return transaction
    }
}
