// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// Google's `Order` (the Orders API, `orders.get`), the fields Sluice reads: what the buyer paid
/// for one order. Fetched only for an order whose purchase state carries no price
/// (``orderToFetch(subscription:product:)``), and stored beside that state, byte for byte.
public struct PlayOrder: Decodable, Sendable, Equatable {
    /// One product of the order (a subscription's base plan and its add-ons are several).
    public struct LineItem: Decodable, Sendable, Equatable {
        public var productId: String?
        /// "Item's total price, taking into account discounts and tax."
        public var total: PlayMoney?

        public init(productId: String?, total: PlayMoney?) {
            self.productId = productId
            self.total = total
        }
    }

    public var orderId: String?
    /// "The final amount paid by the customer, taking into account discounts and taxes."
    public var total: PlayMoney?
    public var lineItems: [LineItem]?

    public init(orderId: String?, total: PlayMoney?, lineItems: [LineItem]? = nil) {
        self.orderId = orderId
        self.total = total
        self.lineItems = lineItems
    }

    /// The order whose charge a purchase state does not say, so that its `Order` is fetched: a
    /// one-time purchase's (a `ProductPurchase` carries no price), or a subscription order of an
    /// introductory price or a plan change's proration (``PlaySubscriptionPurchase/LineItem/isChargedAnUnstatedPrice``).
    /// A base-price order is the plan's `recurringPrice`, and a free trial's is 0: neither is fetched.
    public static func orderToFetch(subscription: PlaySubscriptionPurchase?, product: PlayProductPurchase?) -> String? {
        if let subscription {
            let state = PlaySubscriptionState(rawValue: subscription.subscriptionState ?? "")
            // Nothing is charged yet while pending; a replaced subscription's state is only recorded.
            guard ![.pending, .pendingPurchaseCanceled].contains(state), subscription.canceledStateContext?.replacementCancellation == nil,
                  subscription.lineItemInForce?.isChargedAnUnstatedPrice == true
            else { return nil }
            return subscription.orderInForce
        }
        guard let product, product.purchaseState == 0 else { return nil }
        return product.orderId
    }

    /// What this order charged for `productID`, if it is `orderID` and says so: the product's line
    /// item's total (an order of a base plan with add-ons has one for each), else, for an order
    /// of one line item or none listed, the order's; never an amount below zero.
    public func charge(of orderID: String, product productID: String) -> PlayMoney? {
        guard orderId == orderID else { return nil }
        let items = lineItems ?? []
        let paid = items.first { $0.productId == productID }?.total ?? (items.count <= 1 ? total : nil)
        guard let paid, let amount = paid.minorUnits, amount >= 0 else { return nil }
        return paid
    }
}

extension PlaySubscriptionPurchase {
    /// The line item access follows: the one that runs longest.
    public var lineItemInForce: LineItem? {
        (lineItems ?? []).max { (Self.time($0.expiryTime) ?? .distantPast) < (Self.time($1.expiryTime) ?? .distantPast) }
    }

    /// The order the state is about: the line item in force's latest, else the purchase's.
    public var orderInForce: String? { lineItemInForce?.latestSuccessfulOrderId ?? latestOrderId }

    /// An RFC 3339 time of the answer (with or without fractional seconds).
    public static func time(_ rfc3339: String?) -> Date? {
        guard let rfc3339 else { return nil }
        return (try? Date(rfc3339, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
            ?? (try? Date(rfc3339, strategy: .iso8601))
    }
}
