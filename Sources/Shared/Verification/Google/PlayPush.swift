// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// A Cloud Pub/Sub push request: `{"message": {"data", "messageId", "publishTime", "attributes"},
/// "subscription"}`, whose `data` is the base64 of a Google Play `DeveloperNotification`.
public struct PlayPush: Decodable, Sendable {
    public struct Message: Decodable, Sendable {
        /// Base64 (standard alphabet) of the notification's JSON.
        public var data: String?
        public var messageId: String?
        /// The same id in the field name Pub/Sub also sends.
        public var messageIdSnake: String?
        public var publishTime: String?

        enum CodingKeys: String, CodingKey {
            case data, messageId, publishTime
            case messageIdSnake = "message_id"
        }

        /// `messageId`, or `message_id`: Pub/Sub's id of the message, the same on every redelivery.
        public var id: String? { messageId ?? messageIdSnake }
    }

    public var message: Message
    public var subscription: String?

    /// The push's notification, decoded from `message.data`.
    ///
    /// - Throws: ``Rejection`` `malformed` for data that is not base64 of a notification object.
    public func notification() throws(Rejection) -> PlayDeveloperNotification {
        guard let data = message.data, let json = Data(base64Encoded: data) else {
            throw Rejection(.malformed, "message.data is not base64")
        }
        do {
            return try JSONDecoder().decode(PlayDeveloperNotification.self, from: json)
        } catch {
            throw Rejection(.malformed, "message.data is not a Google Play developer notification")
        }
    }
}

/// A Google Play real-time developer notification (`DeveloperNotification`): exactly one of its
/// four kinds is set. It points at a purchase; it does not carry its state.
public struct PlayDeveloperNotification: Codable, Sendable, Equatable {
    public struct SubscriptionNotification: Codable, Sendable, Equatable {
        public var version: String?
        public var notificationType: Int
        public var purchaseToken: String
        /// Set by notifications of the deprecated v1 API only.
        public var subscriptionId: String?
    }

    public struct OneTimeProductNotification: Codable, Sendable, Equatable {
        public var version: String?
        public var notificationType: Int
        public var purchaseToken: String
        public var sku: String?
    }

    public struct VoidedPurchaseNotification: Codable, Sendable, Equatable {
        public var purchaseToken: String
        public var orderId: String?
        /// 1 a subscription, 2 a one-time product.
        public var productType: Int?
        /// 1 the whole purchase, 2 part of a quantity-based purchase.
        public var refundType: Int?
    }

    public struct TestNotification: Codable, Sendable, Equatable {
        public var version: String?
    }

    public var version: String?
    public var packageName: String?
    /// Milliseconds since the epoch: documented as a long, sent as a string.
    public var eventTimeMillis: PlayMillis?
    public var subscriptionNotification: SubscriptionNotification?
    public var oneTimeProductNotification: OneTimeProductNotification?
    public var voidedPurchaseNotification: VoidedPurchaseNotification?
    public var testNotification: TestNotification?

    /// What the notification is about: its kind, and the purchase token it points at (`nil` for
    /// a test notification, and for a kind Google added later, which is kept and recorded: Pub/Sub
    /// would push a refused one again for days).
    public func kind() -> (type: PlayNotificationType, purchaseToken: String?) {
        if let subscription = subscriptionNotification {
            return (.subscription(subscription.notificationType), subscription.purchaseToken)
        }
        if let product = oneTimeProductNotification {
            return (.oneTimeProduct(product.notificationType), product.purchaseToken)
        }
        if let voided = voidedPurchaseNotification {
            return (.voidedPurchase, voided.purchaseToken)
        }
        if testNotification != nil {
            return (.test, nil)
        }
        return (.unknown, nil)
    }

    /// `eventTimeMillis` as a date.
    public var eventTime: Date? { eventTimeMillis?.date }
}

/// Milliseconds since the epoch, as Google sends them: a JSON string of digits (`"1503349566168"`),
/// or, where the schema says `long`, a number. Encoded as the string.
public struct PlayMillis: Codable, Sendable, Equatable {
    public var milliseconds: Int64

    public init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            milliseconds = number
        } else if let value = Int64(try container.decode(String.self)) {
            milliseconds = value
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not milliseconds")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(milliseconds))
    }

    public var date: Date { Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1_000) }
}
