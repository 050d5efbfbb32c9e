// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// Google Play real-time developer notifications and the Pub/Sub pushes that carry them, shaped
/// as Google documents them (`DeveloperNotification`; the push's `message.data` is its base64).
public enum SamplePlayNotifications {
    public static let packageName = "com.example.sluice"

    /// A `subscriptionNotification` of kind `type` (4 purchased, 2 renewed, …).
    public static func subscription(_ type: Int, token: String, packageName: String = packageName, at time: Date = Date()) -> [String: any Sendable] {
        notification(packageName: packageName, at: time, [
            "subscriptionNotification": ["version": "1.0", "notificationType": type, "purchaseToken": token] as [String: any Sendable],
        ])
    }

    /// A `oneTimeProductNotification` of kind `type` (1 purchased, 2 canceled).
    public static func oneTimeProduct(_ type: Int, token: String, sku: String, at time: Date = Date()) -> [String: any Sendable] {
        notification(packageName: packageName, at: time, [
            "oneTimeProductNotification": ["version": "1.0", "notificationType": type, "purchaseToken": token, "sku": sku] as [String: any Sendable],
        ])
    }

    /// A `voidedPurchaseNotification` (`productType` 1 subscription, 2 one-time; `refundType` 1 full,
    /// 2 part of a quantity-based purchase).
    public static func voided(token: String, orderID: String, productType: Int, refundType: Int = 1, at time: Date = Date()) -> [String: any Sendable] {
        notification(packageName: packageName, at: time, [
            "voidedPurchaseNotification": [
                "purchaseToken": token, "orderId": orderID, "productType": productType, "refundType": refundType,
            ] as [String: any Sendable],
        ])
    }

    /// A `testNotification`, as the Play Console sends it.
    public static func test(packageName: String = packageName, at time: Date = Date()) -> [String: any Sendable] {
        notification(packageName: packageName, at: time, ["testNotification": ["version": "1.0"]])
    }

    private static func notification(packageName: String, at time: Date, _ kind: [String: any Sendable]) -> [String: any Sendable] {
        var notification: [String: any Sendable] = [
            "version": "1.0", "packageName": packageName, "eventTimeMillis": String(Int64(time.timeIntervalSince1970 * 1_000)),
        ]
        notification.merge(kind) { $1 }
        return notification
    }

    /// The push body Pub/Sub posts for `notification`.
    public static func push(
        _ notification: [String: any Sendable], messageID: String = String(UInt64.random(in: 1_000_000_000...9_999_999_999)),
        subscription: String = "projects/sluice-test/subscriptions/play-notifications"
    ) throws -> Data {
        let data = try JSONSerialization.data(withJSONObject: notification, options: [.sortedKeys]).base64EncodedString()
        return try JSONSerialization.data(withJSONObject: [
            "message": ["data": data, "messageId": messageID, "message_id": messageID, "publishTime": "2026-11-27T03:00:00.000Z", "attributes": [:] as [String: String]] as [String: any Sendable],
            "subscription": subscription,
        ] as [String: any Sendable], options: [.sortedKeys])
    }
}
