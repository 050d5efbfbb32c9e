// SPDX-License-Identifier: Apache-2.0

/// An App Store Server Notification's `notificationType` (version 2), as Apple documents it, and
/// the two kinds of Apple event Sluice stores of its own.
///
/// A type Apple adds later is kept as sent (``other(_:)``), as Apple's App Store Server Library
/// keeps `rawNotificationType` beside its enum: it is stored, recorded and forwarded, and changes
/// no state until Sluice learns it.
public enum AppleNotificationType: Hashable, Sendable {
    case consumptionRequest
    case didChangeRenewalPref
    case didChangeRenewalStatus
    case didFailToRenew
    case didRenew
    case expired
    case externalPurchaseToken
    case gracePeriodExpired
    case metadataUpdate
    case migration
    case offerRedeemed
    case oneTimeCharge
    case priceChange
    case priceIncrease
    case refund
    case refundDeclined
    case refundReversed
    case renewalExtended
    case renewalExtension
    case rescindConsent
    case revoke
    case subscribed
    case test
    /// Sluice's own: a transaction the app synced (`POST /v1/iap/storekit-transactions`).
    case storeKitTransaction
    /// Sluice's own: a subscription's status, fetched by reconciliation from the App Store Server API.
    case subscriptionStatus
    /// A type this release does not know, as Apple sent it.
    case other(String)

    /// Each known type and the string Apple (or Sluice, for its own) writes: the one table both
    /// directions read.
    static let names: [(type: AppleNotificationType, name: String)] = [
        (.consumptionRequest, "CONSUMPTION_REQUEST"), (.didChangeRenewalPref, "DID_CHANGE_RENEWAL_PREF"),
        (.didChangeRenewalStatus, "DID_CHANGE_RENEWAL_STATUS"), (.didFailToRenew, "DID_FAIL_TO_RENEW"), (.didRenew, "DID_RENEW"),
        (.expired, "EXPIRED"), (.externalPurchaseToken, "EXTERNAL_PURCHASE_TOKEN"), (.gracePeriodExpired, "GRACE_PERIOD_EXPIRED"),
        (.metadataUpdate, "METADATA_UPDATE"), (.migration, "MIGRATION"), (.offerRedeemed, "OFFER_REDEEMED"),
        (.oneTimeCharge, "ONE_TIME_CHARGE"), (.priceChange, "PRICE_CHANGE"), (.priceIncrease, "PRICE_INCREASE"), (.refund, "REFUND"),
        (.refundDeclined, "REFUND_DECLINED"), (.refundReversed, "REFUND_REVERSED"), (.renewalExtended, "RENEWAL_EXTENDED"),
        (.renewalExtension, "RENEWAL_EXTENSION"), (.rescindConsent, "RESCIND_CONSENT"), (.revoke, "REVOKE"),
        (.subscribed, "SUBSCRIBED"), (.test, "TEST"), (.storeKitTransaction, "STOREKIT_TRANSACTION"),
        (.subscriptionStatus, "SUBSCRIPTION_STATUS"),
    ]

    private static let byName = Dictionary(uniqueKeysWithValues: names.map { ($0.name, $0.type) })

    public init(rawValue: String) {
        self = Self.byName[rawValue] ?? .other(rawValue)
    }

    /// The string as Apple writes it (or as it was sent, for ``other(_:)``).
    public var rawValue: String {
        if case let .other(name) = self { return name }
        return Self.names.first { $0.type == self }?.name ?? ""
    }
}

extension AppleNotificationType: CustomStringConvertible, ExpressibleByStringLiteral {
    public var description: String { rawValue }

    public init(stringLiteral value: String) {
        self.init(rawValue: value)
    }
}

/// A notification's `subtype`, as Apple documents it; one added later is kept as sent.
public enum AppleSubtype: Hashable, Sendable {
    case accepted
    case autoRenewDisabled
    case autoRenewEnabled
    case billingRecovery
    case billingRetry
    case downgrade
    case failure
    case gracePeriod
    case initialBuy
    case pending
    case priceIncrease
    case productNotForSale
    case resubscribe
    case summary
    case upgrade
    case unreported
    case voluntary
    case other(String)

    static let names: [(subtype: AppleSubtype, name: String)] = [
        (.accepted, "ACCEPTED"), (.autoRenewDisabled, "AUTO_RENEW_DISABLED"), (.autoRenewEnabled, "AUTO_RENEW_ENABLED"),
        (.billingRecovery, "BILLING_RECOVERY"), (.billingRetry, "BILLING_RETRY"), (.downgrade, "DOWNGRADE"), (.failure, "FAILURE"),
        (.gracePeriod, "GRACE_PERIOD"), (.initialBuy, "INITIAL_BUY"), (.pending, "PENDING"), (.priceIncrease, "PRICE_INCREASE"),
        (.productNotForSale, "PRODUCT_NOT_FOR_SALE"), (.resubscribe, "RESUBSCRIBE"), (.summary, "SUMMARY"), (.upgrade, "UPGRADE"),
        (.unreported, "UNREPORTED"), (.voluntary, "VOLUNTARY"),
    ]

    private static let byName = Dictionary(uniqueKeysWithValues: names.map { ($0.name, $0.subtype) })

    public init(rawValue: String) {
        self = Self.byName[rawValue] ?? .other(rawValue)
    }

    public var rawValue: String {
        if case let .other(name) = self { return name }
        return Self.names.first { $0.subtype == self }?.name ?? ""
    }
}

extension AppleSubtype: CustomStringConvertible, ExpressibleByStringLiteral {
    public var description: String { rawValue }

    public init(stringLiteral value: String) {
        self.init(rawValue: value)
    }
}

/// A subscription's `status` in the App Store Server API's answer (Get All Subscription
/// Statuses), which reconciliation stores as a ``AppleNotificationType/subscriptionStatus`` event
/// with the status's name as its subtype.
public enum AppleSubscriptionStatus: Int, CaseIterable, Sendable {
    case active = 1
    case expired = 2
    case billingRetry = 3
    case billingGracePeriod = 4
    case revoked = 5

    /// The name stored as the event's subtype.
    public var name: String {
        switch self {
        case .active: "ACTIVE"
        case .expired: "EXPIRED"
        case .billingRetry: "BILLING_RETRY"
        case .billingGracePeriod: "BILLING_GRACE_PERIOD"
        case .revoked: "REVOKED"
        }
    }

    /// The status a stored subtype names.
    public init?(name: String) {
        guard let status = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = status
    }
}
