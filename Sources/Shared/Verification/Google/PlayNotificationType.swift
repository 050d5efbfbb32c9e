// SPDX-License-Identifier: Apache-2.0

/// What a Google Play row of the events queue is (its `type`): a real-time developer
/// notification's kind by Google's name, or a Play purchase state Sluice fetched.
///
/// Google numbers the kinds of `subscriptionNotification` and `oneTimeProductNotification`;
/// Sluice stores the documented names, and `SUBSCRIPTION_NOTIFICATION_<n>` for a number Google adds
/// later (kept, never refused). The notification is only a pointer: the worker applies the state
/// it fetches from the Play Developer API, never the kind alone.
public struct PlayNotificationType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    /// `subscriptionNotification.notificationType`, as Google documents it.
    public static let subscriptionKinds: [Int: PlayNotificationType] = [
        1: .init(rawValue: "SUBSCRIPTION_RECOVERED"),
        2: .init(rawValue: "SUBSCRIPTION_RENEWED"),
        3: .init(rawValue: "SUBSCRIPTION_CANCELED"),
        4: .init(rawValue: "SUBSCRIPTION_PURCHASED"),
        5: .init(rawValue: "SUBSCRIPTION_ON_HOLD"),
        6: .init(rawValue: "SUBSCRIPTION_IN_GRACE_PERIOD"),
        7: .init(rawValue: "SUBSCRIPTION_RESTARTED"),
        8: .init(rawValue: "SUBSCRIPTION_PRICE_CHANGE_CONFIRMED"),
        9: .init(rawValue: "SUBSCRIPTION_DEFERRED"),
        10: .init(rawValue: "SUBSCRIPTION_PAUSED"),
        11: .init(rawValue: "SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED"),
        12: .init(rawValue: "SUBSCRIPTION_REVOKED"),
        13: .init(rawValue: "SUBSCRIPTION_EXPIRED"),
        17: .init(rawValue: "SUBSCRIPTION_ITEMS_CHANGED"),
        18: .init(rawValue: "SUBSCRIPTION_CANCELLATION_SCHEDULED"),
        19: .init(rawValue: "SUBSCRIPTION_PRICE_CHANGE_UPDATED"),
        20: .init(rawValue: "SUBSCRIPTION_PENDING_PURCHASE_CANCELED"),
        22: .init(rawValue: "SUBSCRIPTION_PRICE_STEP_UP_CONSENT_UPDATED"),
    ]

    /// `oneTimeProductNotification.notificationType`, as Google documents it.
    public static let oneTimeProductKinds: [Int: PlayNotificationType] = [
        1: .init(rawValue: "ONE_TIME_PRODUCT_PURCHASED"),
        2: .init(rawValue: "ONE_TIME_PRODUCT_CANCELED"),
    ]

    /// A `subscriptionNotification` of kind `code`.
    public static func subscription(_ code: Int) -> PlayNotificationType {
        subscriptionKinds[code] ?? .init(rawValue: "SUBSCRIPTION_NOTIFICATION_\(code)")
    }

    /// A `oneTimeProductNotification` of kind `code`.
    public static func oneTimeProduct(_ code: Int) -> PlayNotificationType {
        oneTimeProductKinds[code] ?? .init(rawValue: "ONE_TIME_PRODUCT_NOTIFICATION_\(code)")
    }

    /// A `voidedPurchaseNotification`: a refund, chargeback or cancellation voided the purchase.
    public static let voidedPurchase = PlayNotificationType(rawValue: "VOIDED_PURCHASE")
    /// A `testNotification` sent from the Play Console: recorded and acknowledged.
    public static let test = PlayNotificationType(rawValue: "TEST_NOTIFICATION")
    /// A notification of none of the kinds Sluice knows: recorded.
    public static let unknown = PlayNotificationType(rawValue: "UNKNOWN_NOTIFICATION")
    /// A subscription's state as the worker fetched it (`purchases.subscriptionsv2.get`).
    public static let subscriptionState = PlayNotificationType(rawValue: "PLAY_SUBSCRIPTION_STATE")
    /// A one-time product purchase's state as the worker fetched it (`purchases.products.get`).
    public static let productState = PlayNotificationType(rawValue: "PLAY_PRODUCT_STATE")

    /// A purchase the app synced (`POST /v1/iap/play-purchases`): its `cause` and the stored row's type.
    public static let syncEventType = "PLAY_PURCHASE_SYNC"

    /// Whether the row is a fetched state, which the worker applies, rather than a pointer to one.
    public var isFetchedState: Bool { self == .subscriptionState || self == .productState }
}
