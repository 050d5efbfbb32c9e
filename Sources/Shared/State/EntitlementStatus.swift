// SPDX-License-Identifier: Apache-2.0

/// An entitlement's status (docs/CONTRACT.md).
public enum EntitlementStatus: String, Sendable, Codable, CaseIterable {
    case active, trialing
    case gracePeriod = "grace_period"
    case pastDue = "past_due"
    case paused
    /// Auto-renew is off; access lasts until `expires_at`.
    case cancelled
    case expired, revoked, refunded
}

/// A transaction's status (docs/CONTRACT.md).
public enum TransactionStatus: String, Sendable, Codable, CaseIterable {
    case pending, processing, succeeded, failed, refunded, disputed
}

/// What kind of product an entitlement grants.
public enum ProductType: String, Sendable, Codable, CaseIterable {
    case consumable
    case nonConsumable = "non_consumable"
    case autoRenewable = "auto_renewable"
    case nonRenewing = "non_renewing"

    /// Apple's `type` of a transaction.
    public init?(appleType: String?) {
        switch appleType {
        case "Auto-Renewable Subscription": self = .autoRenewable
        case "Non-Consumable": self = .nonConsumable
        case "Consumable": self = .consumable
        case "Non-Renewing Subscription": self = .nonRenewing
        default: return nil
        }
    }
}

/// Where a purchase was made.
public enum PurchaseSource: String, Sendable, Codable {
    /// Stripe.
    case webCheckout = "web_checkout"
    /// Apple.
    case storeKit = "store_kit"
    /// Google Play.
    case playStore = "play_store"
}

/// Whose money: real payments, or Apple Sandbox / TestFlight and Stripe test mode (docs/CONTRACT.md).
/// State of one environment never changes the other's: entity keys and links carry it.
public enum PurchaseEnvironment: String, Sendable, Codable, CaseIterable {
    case production, sandbox

    /// Apple's `environment` (`Production`, `Sandbox`); `nil` for any other (`Xcode`, `LocalTesting`).
    public init?(apple: String?) {
        switch apple {
        case "Production": self = .production
        case "Sandbox": self = .sandbox
        default: return nil
        }
    }

    /// Stripe's `livemode`.
    public init(livemode: Bool) {
        self = livemode ? .production : .sandbox
    }
}

/// Why a subscription ended or will end (`expiration_reason`).
public enum ExpirationReason: String, Sendable, Codable, CaseIterable {
    /// The customer cancelled (Apple `VOLUNTARY` / expirationIntent 1, Stripe `cancellation_requested`).
    case voluntary
    /// The payment could not be collected (Apple `BILLING_RETRY` / 2, Stripe `payment_failed`).
    case billingError = "billing_error"
    /// The customer did not consent to a price increase (Apple `PRICE_INCREASE` / 3).
    case priceIncrease = "price_increase"
    /// The product was no longer for sale (Apple `PRODUCT_NOT_FOR_SALE` / 4).
    case productUnavailable = "product_unavailable"
    /// Stripe `payment_disputed`.
    case disputed
    case other
}

/// Whether the user bought the product or has it through Family Sharing (Apple `inAppOwnershipType`).
public enum Ownership: String, Sendable, Codable, CaseIterable {
    case purchased
    case familyShared = "family_shared"
}

/// Where an Apple price increase stands (renewal info `priceIncreaseStatus`, `PRICE_INCREASE` notifications).
public enum PriceIncreaseStatus: String, Sendable, Codable, CaseIterable {
    /// The customer has not answered yet; without consent the subscription expires.
    case pending
    /// The customer consented, or the increase needs no consent.
    case accepted
}
