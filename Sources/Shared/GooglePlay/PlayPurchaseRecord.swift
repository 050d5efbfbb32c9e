// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import NIOCore
import NIOFoundationCompat

/// A `play_purchase` row of the events queue: a Google Play purchase's state as the Play
/// Developer API answered, kept byte for byte under `purchase`, with what it was fetched for; or a
/// voided purchase (`voided`). It is what the worker applies: the push that led to it is only a
/// pointer.
///
/// Stored as `{"cause", "fetchedAt", "kind", "packageName", "productId", "purchaseToken", "userId", "voided", "order": <Google's
/// Order>, "purchase": <Google's JSON>}` (`order` only for a state whose order's price it does not carry, ``PlayOrder``).
public struct PlayPurchaseRecord: Sendable {
    /// A voided purchase, from a `voidedPurchaseNotification` or `voidedpurchases.list`.
    public struct Voided: Codable, Sendable, Equatable {
        public var orderId: String?
        public var voidedTimeMillis: PlayMillis?
        /// `refundType` 2 (`REFUND_TYPE_QUANTITY_BASED_PARTIAL_REFUND`), or a listed void with a
        /// `voidedQuantity`: part of a multi-quantity purchase.
        public var partial: Bool?

        public init(orderId: String?, voidedTimeMillis: PlayMillis?, partial: Bool? = nil) {
            self.orderId = orderId
            self.voidedTimeMillis = voidedTimeMillis
            self.partial = partial
        }

        public var isPartial: Bool { partial == true }
    }

    /// Everything but the purchase, in the order it is stored.
    struct Header: Codable {
        var cause: String?
        var fetchedAt: PlayMillis
        var kind: PlayProductKind
        var packageName: String
        var productId: String?
        var purchaseToken: String
        var userId: String?
        var voided: Voided?
    }

    /// The notification kind that led to the fetch (`SUBSCRIPTION_REVOKED`, …), or `PLAY_PURCHASE_SYNC`:
    /// context only, never what decides the state.
    public var cause: String?
    /// When Google answered: the time that orders the states of one purchase (also the row's `event_time`).
    public var fetchedAt: Date
    public var kind: PlayProductKind
    public var packageName: String
    /// The one-time product's id (the notification's `sku`, the app's `product_id`).
    public var productID: String?
    public var purchaseToken: String
    /// The user an app's sync named.
    public var userID: String?
    public var voided: Voided?
    /// Google's answer, as it came; `nil` for a voided purchase.
    public var purchase: ByteBuffer?
    /// The Orders API's answer for the state's order, as it came, when it was fetched with it.
    public var order: ByteBuffer?

    public init(
        cause: String?, fetchedAt: Date, kind: PlayProductKind, packageName: String, productID: String?, purchaseToken: String, userID: String? = nil,
        voided: Voided? = nil, purchase: ByteBuffer?, order: ByteBuffer? = nil
    ) {
        self.cause = cause
        self.fetchedAt = fetchedAt
        self.kind = kind
        self.packageName = packageName
        self.productID = productID
        self.purchaseToken = purchaseToken
        self.userID = userID
        self.voided = voided
        self.purchase = purchase
        self.order = order
    }

    /// The `play_purchase` key of a voided purchase, pushed or listed alike: its order (each renewal
    /// has its own), else its token; a partial refund, of which an order may have several, also
    /// its time.
    public static func voidedExternalID(_ voided: Voided, token: String) -> String {
        "voided:" + (voided.orderId ?? token) + (voided.isPartial ? ":\(voided.voidedTimeMillis?.milliseconds ?? 0)" : "")
    }

    /// The row's `type`.
    public var type: PlayNotificationType {
        if cause == PlayNotificationType.syncEventType { return PlayNotificationType(rawValue: PlayNotificationType.syncEventType) }
        return voided != nil ? .voidedPurchase : kind == .subscription ? .subscriptionState : .productState
    }

    /// The queue row, keyed `externalID`, ordered by the purchase token.
    public func record(externalID: String) -> EventRecord {
        EventRecord(
            source: .playPurchase, externalID: externalID, type: type.rawValue, eventTime: fetchedAt, orderingKey: purchaseToken,
            payload: encoded())
    }

    /// The stored bytes: the header's members, then Google's answers spliced in unchanged.
    public func encoded() -> ByteBuffer {
        var stored = CanonicalJSON.encode(Header(
            cause: cause, fetchedAt: PlayMillis(milliseconds: fetchedAt.millisecondsSince1970), kind: kind, packageName: packageName, productId: productID, purchaseToken: purchaseToken, userId: userID,
            voided: voided))
        for (name, answer) in [("order", order), ("purchase", purchase)] {
            guard let answer, answer.readableBytes > 0 else { continue }
            stored.moveWriterIndex(to: stored.writerIndex - 1)  // drop the closing brace
            stored.writeString(",\"\(name)\":")
            stored.writeImmutableBuffer(answer)
            stored.writeString("}")
        }
        return stored
    }

    /// A stored row's record.
    ///
    /// - Throws: ``Rejection`` `malformed` for a payload that is not one.
    public static func decode(_ payload: ByteBuffer) throws(Rejection) -> (
        PlayPurchaseRecord, subscription: PlaySubscriptionPurchase?, product: PlayProductPurchase?, order: PlayOrder?
    ) {
        struct Subscription: Decodable { var purchase: PlaySubscriptionPurchase? }
        struct Product: Decodable { var purchase: PlayProductPurchase? }
        struct Order: Decodable { var order: PlayOrder? }
        do {
            let decoder = JSONDecoder()
            let stored = try decoder.decode(Header.self, from: payload)
            let record = PlayPurchaseRecord(
                cause: stored.cause, fetchedAt: stored.fetchedAt.date, kind: stored.kind, packageName: stored.packageName, productID: stored.productId,
                purchaseToken: stored.purchaseToken, userID: stored.userId, voided: stored.voided, purchase: nil)
            // What an order charged only completes the state: one Sluice cannot read never
            // holds the state up.
            let order = (try? decoder.decode(Order.self, from: payload))?.order
            switch stored.kind {
            case .subscription: return (record, try decoder.decode(Subscription.self, from: payload).purchase, nil, order)
            case .product: return (record, nil, try decoder.decode(Product.self, from: payload).purchase, order)
            }
        } catch {
            throw Rejection(.malformed, "the row is not a stored Google Play purchase")
        }
    }
}
