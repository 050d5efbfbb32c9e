// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// The pure state transitions of Google Play purchases (docs/TRANSITIONS.md, "Google Play").
///
/// Each applied row is the purchase's whole state as the Play Developer API answered it when
/// fetched, so the entitlement is set from it, never moved by a notification's kind: a fetch older
/// than what the entitlement was last set from changes nothing. The kind that led to the fetch
/// only says why a subscription ended (`SUBSCRIPTION_REVOKED`).
struct PlayDecider {
    /// A stored purchase state, decoded.
    struct Event: Sendable {
        var eventID: Int64
        /// When it was fetched: the time that orders the states of one purchase.
        var time: Date
        var record: PlayPurchaseRecord
        var subscription: PlaySubscriptionPurchase?
        var product: PlayProductPurchase?
        /// The `Order` fetched with the state, for an order whose state carries no price.
        var order: PlayOrder? = nil
        /// The environment of a void, which carries no purchase: its token's link's.
        var environmentOverride: PurchaseEnvironment?

        /// Test purchases (a license tester's) are Sandbox.
        var environment: PurchaseEnvironment {
            environmentOverride ?? (subscription?.testPurchase != nil || product?.purchaseType == 0 ? .sandbox : .production)
        }
    }

    /// The state the event may change, loaded under the entitlement's lock.
    struct State: Sendable {
        /// The entitlement's key: the first token's of an upgrade chain.
        var entityKey: String
        var entitlement: EntitlementState?
        /// The ledger row of the order the state names.
        var transaction: TransactionState?
        /// The purchase's user: the app's `obfuscatedExternalAccountId`, else a sync's (as
        /// `TRANSFER_BEHAVIOR` allows), else the linked one.
        var userID: String?
        /// Whether the token is new to an entitlement it reached through `linkedPurchaseToken` (an
        /// upgrade, downgrade or re-signup): the old token's states, however late they were fetched,
        /// never make it stale.
        var joinsChain = false
        /// The newer token that replaced this one, when one did.
        var replacedBy: String?
    }

    /// What a voided purchase or a canceled product becomes.
    static let voidedStatus = EntitlementStatus.refunded

    static func decide(_ event: Event, _ state: State) -> Decision {
        let key = state.entityKey
        if let newer = state.replacedBy {
            // A void of the replaced token's order still refunds that order (and takes back what it
            // granted); the newer token's period stays in force (decideVoided).
            if let voided = event.record.voided { return decideVoided(voided, event, state) }
            return .recorded("replaced by a newer purchase token (\(newer.prefix(16))…); its states no longer change the entitlement", entityKey: key)
        }
        if !state.joinsChain, let newest = state.entitlement?.lastEventTime, event.time.millisecondsSince1970 < newest.millisecondsSince1970 {
            return .stale(key, newest: newest.formatted(.iso8601))
        }
        if let voided = event.record.voided {
            return decideVoided(voided, event, state)
        }
        if let subscription = event.subscription {
            return decideSubscription(subscription, event, state)
        }
        if let product = event.product {
            return decideProduct(product, event, state)
        }
        return .recorded("the row carries no purchase", entityKey: key)
    }

    // MARK: Subscriptions

    /// Why an expired subscription ended, from its `canceledStateContext`: Google's own cancel (a
    /// payment it could not collect) is `billing_error`, the developer's `other`, the user's
    /// `voluntary`; without a context, a cancel stored before (the user's) is `voluntary`, and
    /// anything else `other`.
    static func expirationReason(_ context: PlaySubscriptionPurchase.CanceledStateContext?, cancelledAt: Date?) -> ExpirationReason {
        if context?.systemInitiatedCancellation != nil { return .billingError }
        if context?.developerInitiatedCancellation != nil { return .other }
        if context?.userInitiatedCancellation != nil || cancelledAt != nil { return .voluntary }
        return .other
    }

    private static func decideSubscription(_ purchase: PlaySubscriptionPurchase, _ event: Event, _ state: State) -> Decision {
        let key = state.entityKey
        let subscriptionState = PlaySubscriptionState(rawValue: purchase.subscriptionState ?? "")
        let item = purchase.lineItemInForce
        guard let productID = item?.productId ?? state.entitlement?.productID else {
            return .recorded("the subscription names no product", entityKey: key)
        }
        if purchase.canceledStateContext?.replacementCancellation != nil {
            // An upgrade, downgrade or re-signup replaced it: the new token moves the entitlement.
            return .recorded("replaced by a newer purchase (replacementCancellation)", entityKey: key)
        }
        guard var status = status(of: subscriptionState, cause: event.record.cause) else {
            // Pending: nothing is granted until it is paid; a canceled pending purchase never was.
            return .recorded("\(subscriptionState.rawValue): nothing is granted until it is paid", entityKey: key)
        }
        // A refund is final: a later fetch saying the period ended does not undo it, and the
        // period in force, once refunded, grants nothing.
        if let current = state.entitlement?.status, [.refunded, .revoked].contains(current), status == .expired { status = current }
        if state.transaction?.status == .refunded, status != .expired { status = .refunded }
        // A free trial in force (`offerPhase.freeTrial`): trialing while it renews, cancelled (still
        // a trial) once the user turned renewal off, as a Stripe trial.
        let inTrial = item?.isFreeTrial == true && [.active, .cancelled].contains(status)
        if inTrial, status == .active { status = .trialing }
        var entitlement = state.entitlement ?? EntitlementState(
            entityKey: key, userID: state.userID, productID: productID, productType: .autoRenewable, source: .playStore,
            environment: event.environment, status: status)
        entitlement.userID = state.userID ?? entitlement.userID
        entitlement.productID = productID
        entitlement.status = status
        entitlement.expiresAt = date(item?.expiryTime)
        entitlement.isTrial = inTrial
        entitlement.trialEndsAt = inTrial ? entitlement.expiresAt : nil
        entitlement.purchasedAt = entitlement.purchasedAt ?? date(purchase.startTime)
        entitlement.willRenew = item?.autoRenewingPlan?.autoRenewEnabled ?? false
        entitlement.offer = item?.offerDetails?.offerId
        entitlement.pendingProductID = nil
        let cancelled = purchase.canceledStateContext
        let cancelTime = date(cancelled?.userInitiatedCancellation?.cancelTime)
        switch status {
        case .cancelled: entitlement.cancelledAt = cancelTime ?? entitlement.cancelledAt ?? event.time
        // A subscription the user cancelled, now ended: when they cancelled stays known.
        case .expired: entitlement.cancelledAt = cancelTime ?? entitlement.cancelledAt
        default: entitlement.cancelledAt = nil
        }
        entitlement.gracePeriodExpiresAt = status == .gracePeriod ? entitlement.expiresAt : nil
        entitlement.billingIssueDetectedAt = [.gracePeriod, .pastDue].contains(status) ? entitlement.billingIssueDetectedAt ?? event.time : nil
        entitlement.expirationReason = status == .expired ? Self.expirationReason(cancelled, cancelledAt: entitlement.cancelledAt) : nil
        if status == .refunded { entitlement.willRenew = false }
        entitlement.lastEventTime = event.time

        var decision = Decision(outcome: .applied, entityKey: key, entitlements: [entitlement])
        if let orderID = purchase.orderInForce {
            var transaction = orderRow(orderID, of: entitlement, state, event)
            let price = item?.autoRenewingPlan?.recurringPrice
            // A free trial's order charged nothing (and a trial's currency grants apply to it); an
            // introductory price's or a plan change's prorated order charged an amount Google does
            // not say, so it is unknown (nil), never the list price; otherwise the plan's price.
            // Worked out once, from the first purchase state that reaches the order (which sets
            // its currency): `offerPhase` is the item's phase now, and a later state of the same
            // order (on hold after the last introductory period) is not what that order charged.
            if transaction.amount == nil, transaction.currency == nil, item?.isChargedAnUnstatedPrice != true {
                transaction.amount = item?.isFreeTrial == true ? 0 : price?.minorUnits
                transaction.isTrial = item?.isFreeTrial == true
            }
            transaction.currency = transaction.currency ?? price?.currencyCode?.uppercased()
            charge(&transaction, of: orderID, by: event.order)
            transaction.purchasedAt = transaction.purchasedAt ?? (state.entitlement == nil ? date(purchase.startTime) : nil) ?? event.time
            transaction.periodEnd = entitlement.expiresAt
            transaction.lastEventTime = event.time
            decision.transactions = [transaction]
        }
        decision.links = links(event, state, userID: entitlement.userID)
        return decision
    }

    /// The entitlement status of a subscription state; `nil` for one that grants nothing yet.
    static func status(of state: PlaySubscriptionState, cause: String?) -> EntitlementStatus? {
        switch state {
        case .active: .active
        case .canceled: .cancelled
        case .inGracePeriod: .gracePeriod
        case .onHold: .pastDue
        case .paused: .paused
        case .expired: cause == PlayNotificationType.subscription(12).rawValue ? .revoked : .expired
        case .pending, .pendingPurchaseCanceled: nil
        default: nil
        }
    }

    // MARK: One-time products

    private static func decideProduct(_ purchase: PlayProductPurchase, _ event: Event, _ state: State) -> Decision {
        let key = state.entityKey
        guard let productID = purchase.productId ?? event.record.productID ?? state.entitlement?.productID else {
            return .recorded("the purchase names no product", entityKey: key)
        }
        var status: EntitlementStatus
        switch purchase.purchaseState {
        case 0: status = .active
        case 1 where state.entitlement != nil: status = voidedStatus
        case 1: return .recorded("canceled before anything was granted for it", entityKey: key)
        default: return .recorded("pending: nothing is granted until it is paid", entityKey: key)
        }
        // Its order refunded already (a void applied before this state): it grants nothing.
        if state.transaction?.status == .refunded { status = voidedStatus }
        var entitlement = state.entitlement ?? EntitlementState(
            entityKey: key, userID: state.userID, productID: productID, productType: .nonConsumable, source: .playStore,
            environment: event.environment, status: status)
        entitlement.userID = state.userID ?? entitlement.userID
        entitlement.status = status
        entitlement.purchasedAt = entitlement.purchasedAt ?? purchase.purchaseTimeMillis?.date
        entitlement.willRenew = false
        entitlement.lastEventTime = event.time
        var decision = Decision(outcome: .applied, entityKey: key, entitlements: [entitlement])
        if let orderID = purchase.orderId {
            var transaction = orderRow(orderID, of: entitlement, state, event)
            // Several of a product bought at once (multi-quantity in Play Console).
            transaction.quantity = purchase.quantity.flatMap { $0 > 1 ? $0 : nil } ?? transaction.quantity
            // Some of them refunded (a quantity-based partial refund): never fewer than a state
            // applied before said, should an older answer come late.
            if let refunded = purchase.quantityRefunded {
                transaction.quantityRefunded = max(refunded, transaction.quantityRefunded ?? 0)
            }
            transaction.purchasedAt = transaction.purchasedAt ?? purchase.purchaseTimeMillis?.date
            charge(&transaction, of: orderID, by: event.order)
            if status == voidedStatus, transaction.status != .refunded {
                transaction.status = .refunded
                transaction.refundedAt = event.time
            }
            transaction.lastEventTime = event.time
            decision.transactions = [transaction]
        }
        decision.links = links(event, state, userID: entitlement.userID)
        return decision
    }

    // MARK: Voided purchases

    private static func decideVoided(_ voided: PlayPurchaseRecord.Voided, _ event: Event, _ state: State) -> Decision {
        let key = state.entityKey
        let voidedAt = voided.voidedTimeMillis?.date ?? event.time
        if voided.isPartial {
            // Part of a quantity-based purchase: the purchase stands. How many were refunded comes
            // with the purchase's state, fetched after it (PlayPartialRefunds).
            return .recorded("a partial refund of a quantity-based purchase: access stays", entityKey: key)
        }
        var decision = Decision(outcome: .applied, entityKey: key)
        if let orderID = voided.orderId {
            // The order's ledger row, refunded: written even before anything was granted, so that a
            // purchase state fetched before the refund and applied after it grants nothing.
            var transaction = state.transaction ?? TransactionState(
                source: .playStore, providerTransactionID: orderID, environment: state.entitlement?.environment ?? event.environment,
                status: .refunded)
            transaction.entitlementKey = key
            transaction.userID = transaction.userID ?? state.entitlement?.userID ?? state.userID
            transaction.productID = transaction.productID ?? state.entitlement?.productID
            transaction.productType = transaction.productType ?? state.entitlement?.productType
            transaction.status = .refunded
            transaction.refundedAt = transaction.refundedAt ?? voidedAt
            transaction.amountRefunded = transaction.amount
            transaction.lastEventTime = event.time
            decision.transactions = [transaction]
        }
        guard var entitlement = state.entitlement else {
            decision.detail = "voided before anything was granted for it"
            return decision
        }
        // A subscription's void ends access only when it paid for the period in force: its order
        // is known and its period is the entitlement's. A one-time purchase has one order.
        let voidsPeriodInForce: Bool
        if state.replacedBy != nil {
            // The order of a token an upgrade or re-signup replaced: the newer token pays for the period.
            voidsPeriodInForce = false
        } else if entitlement.productType == .autoRenewable {
            if let periodEnd = state.transaction?.periodEnd, let expires = entitlement.expiresAt {
                voidsPeriodInForce = periodEnd >= expires
            } else {
                voidsPeriodInForce = state.transaction != nil || voided.orderId == nil
            }
        } else {
            voidsPeriodInForce = true
        }
        if voidsPeriodInForce {
            entitlement.status = voidedStatus
            entitlement.willRenew = false
            entitlement.lastEventTime = event.time
            decision.entitlements = [entitlement]
        }
        return decision
    }

    // MARK: Shared

    /// The token's link to its entitlement and user, and, for an upgrade or re-signup, the
    /// replaced token's.
    private static func links(_ event: Event, _ state: State, userID: String?) -> [ProviderLink] {
        let scope = linkScope(event.environment)
        var links = [ProviderLink(.playPurchaseToken, event.record.purchaseToken, userID: userID, entitlementKey: state.entityKey, scope: scope)]
        if let linked = event.subscription?.linkedPurchaseToken {
            links.append(ProviderLink(.playReplacedToken, linked, userID: userID, entitlementKey: state.entityKey,
                                      transactionKey: event.record.purchaseToken, scope: scope))
        }
        return links
    }

    /// The scope of a purchase token's links (``ProviderLink/scope``).
    static func linkScope(_ environment: PurchaseEnvironment) -> String {
        environment == .sandbox ? "sandbox:" : ""
    }

    static func date(_ rfc3339: String?) -> Date? { PlaySubscriptionPurchase.time(rfc3339) }

    /// The ledger row of the order a purchase's state names (the one stored, or a new one that
    /// succeeded), for the entitlement it pays for: its key, user, product and type.
    private static func orderRow(_ orderID: String, of entitlement: EntitlementState, _ state: State, _ event: Event) -> TransactionState {
        var transaction = state.transaction ?? TransactionState(
            source: .playStore, providerTransactionID: orderID, environment: event.environment, status: .succeeded)
        transaction.entitlementKey = entitlement.entityKey
        transaction.userID = entitlement.userID
        transaction.productID = entitlement.productID
        transaction.productType = entitlement.productType
        return transaction
    }

    /// An order whose state carries no price (a one-time purchase, an introductory or prorated
    /// subscription order) is the amount its `Order` says the buyer paid, tax included, once
    /// one was fetched with a state (``PlayOrder/orderToFetch(subscription:product:)``); a known
    /// amount is never changed.
    static func charge(_ transaction: inout TransactionState, of orderID: String, by order: PlayOrder?) {
        guard transaction.amount == nil, let productID = transaction.productID, let paid = order?.charge(of: orderID, product: productID) else { return }
        transaction.amount = paid.minorUnits
        transaction.currency = paid.currencyCode?.uppercased()
        // Its void applied first (a refund of the whole order): all of it was refunded.
        if transaction.status == .refunded, transaction.amountRefunded == nil { transaction.amountRefunded = transaction.amount }
    }
}
