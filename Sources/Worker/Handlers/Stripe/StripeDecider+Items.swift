// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// A subscription with several items (Stripe bills several products on one invoice, one payment
/// per period): each item's product is an entitlement of its own, and all of them share the
/// subscription's life — status, period, cancellation, trial, billing problems, refunds and
/// disputes of its invoices.
///
/// The first item's product is the subscription's entitlement (its key is the subscription's, as
/// for a subscription of one product); every other product is a companion keyed
/// ``companionKey(of:product:)``. Whatever an event decides for the subscription's entitlement is
/// made to each companion (``withCompanions(_:_:_:_:)``), so the rule lives once, in the
/// subscription's transitions.
extension StripeDecider {
    /// The entity key of the companion entitlement of `product` on the subscription `subscriptionKey`.
    static func companionKey(of subscriptionKey: String, product: String) -> String {
        EntityKey.companion(of: subscriptionKey, product: product)
    }

    /// The items of a subscription object (or of its `previous_attributes`), in order.
    static func items(of subscription: JSONValue) -> [JSONValue] {
        guard case .array(let items) = subscription["items.data"] else { return [] }
        return items
    }

    /// The product of a subscription item: its price's `metadata.product_id`, else its `lookup_key`,
    /// else its Stripe product (the order of the first item's, docs/stripe.md).
    static func product(ofItem item: JSONValue) -> String? {
        item["price.metadata.product_id"].string ?? item["price.lookup_key"].string ?? item["price.product"].id ?? item["plan.product"].id
    }

    /// The companions' products a subscription object names: those of its items after the first
    /// (which is the subscription's own entitlement), other than the subscription's product.
    /// `nil` when the object is not a subscription.
    static func companionProducts(in object: JSONValue, primary: String) -> [String]? {
        guard object["object"].string == "subscription" else { return nil }
        var seen: Set<String> = [primary]
        return items(of: object).dropFirst().compactMap(product(ofItem:)).filter { seen.insert($0).inserted }
    }

    /// `decision`, with each change it makes to the subscription's entitlement made to the
    /// companions too: those the event's subscription object lists (created when new), and those
    /// loaded. A loaded companion whose item the subscription object no longer lists has been
    /// removed from the subscription: it expires.
    static func withCompanions(_ decision: Decision, _ event: StripeEvent, _ subject: Subject, _ state: State) -> Decision {
        guard let key = subject.entitlementKey, subject.scope.isSubscriptionKey(key),
              let primary = decision.entitlements.first(where: { $0.entityKey == key })
        else { return decision }
        let loaded = Dictionary(state.companions.map { ($0.productID, $0) }, uniquingKeysWith: { first, _ in first })
        let listed = companionProducts(in: event.object, primary: primary.productID)
        // Without the subscription's items (an invoice, a refund, a dispute), the companions are the
        // live ones: an expired companion was removed from the subscription (or ended with it),
        // and only a subscription object listing its item again brings it back.
        let following = listed ?? state.companions.filter { $0.status != .expired }.map(\.productID)
        var decision = decision
        for product in following where product != primary.productID {
            // A companion bought with the subscription was bought when it was; one added later, then.
            let bought = loaded[product]?.purchasedAt ?? (state.entitlement == nil ? primary.purchasedAt : nil) ?? event.created
            decision.entitlements.append(mirror(primary, product: product, subscriptionKey: key, purchasedAt: bought))
        }
        if let listed {
            for companion in state.companions where !listed.contains(companion.productID) && companion.status != .expired {
                var removed = companion
                removed.status = .expired
                removed.willRenew = false
                removed.expirationReason = .other
                removed.lastEventTime = max(event.created, companion.lastEventTime ?? event.created)
                decision.entitlements.append(removed)
            }
        }
        return decision
    }

    /// A companion made to follow the subscription's entitlement: everything but its key, product
    /// and purchase time, which are its own.
    static func mirror(_ primary: EntitlementState, product: String, subscriptionKey: String, purchasedAt: Date?) -> EntitlementState {
        var mirrored = primary
        mirrored.entityKey = companionKey(of: subscriptionKey, product: product)
        mirrored.productID = product
        mirrored.pendingProductID = nil
        mirrored.purchasedAt = purchasedAt
        return mirrored
    }
}
