// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// Google's `Order` (the Orders API, `orders.get`), the fields Sluice reads: what the buyer paid
/// for one order. Fetched only for an order whose purchase state carries no price
/// (``orderToFetch(subscription:product:)``), and stored beside that state, byte for byte.
public struct PlayOrder: Decodable, Sendable, Equatable {
    public var orderId: String?
    /// "The final amount paid by the customer, taking into account discounts and taxes."
    public var total: PlayMoney?

    public init(orderId: String?, total: PlayMoney?) {
        self.orderId = orderId
        self.total = total
    }

    /// The order whose charge a purchase state does not say, so that its `Order` is fetched: a
    /// one-time purchase's (a `ProductPurchase` carries no price), or a subscription order of an
    /// introductory price or a plan change's proration (``PlaySubscriptionPurchase/LineItem/isChargedAnUnstatedPrice``).
    /// A base-price order is the plan's `recurringPrice`, and a free trial's is 0: neither is fetched.
    public static func orderToFetch(subscription: PlaySubscriptionPurchase?, product: PlayProductPurchase?) -> String? {
        if let subscription {
            guard subscription.lineItemInForce?.isChargedAnUnstatedPrice == true else { return nil }
            return subscription.orderInForce
        }
        guard let product, product.purchaseState == 0 else { return nil }
        return product.orderId
    }

    /// What this order charged, if it is `orderID` and says so.
    public func charge(of orderID: String) -> PlayMoney? {
        guard orderId == orderID, let total, total.minorUnits != nil else { return nil }
        return total
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
