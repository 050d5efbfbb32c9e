// SPDX-License-Identifier: Apache-2.0

/// An entitlement's status (CONTRACT.md).
public enum EntitlementStatus: String, Sendable, Codable, CaseIterable {
    case active, trialing
    case gracePeriod = "grace_period"
    case pastDue = "past_due"
    case paused
    /// Auto-renew is off; access lasts until `expires_at`.
    case cancelled
    case expired, revoked, refunded
}

/// A transaction's status (CONTRACT.md).
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
}
