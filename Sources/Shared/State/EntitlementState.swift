// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// A user's access to a product, as stored in `entitlements`.
public struct EntitlementState: Sendable, Equatable {
    /// `stripe:subscription:sub_…`, `stripe:payment:pi_…` or `apple:<originalTransactionId>`.
    public var entityKey: String
    public var userID: String?
    public var email: String?
    public var productID: String
    public var productType: ProductType
    public var source: PurchaseSource
    /// Set from the provider's payload (Apple `environment`, Stripe `livemode`); part of the entity key.
    public var environment: PurchaseEnvironment
    public var status: EntitlementStatus
    public var expiresAt: Date?
    public var purchasedAt: Date?
    public var willRenew: Bool?
    public var isTrial = false
    public var trialEndsAt: Date?
    public var cancelledAt: Date?
    public var gracePeriodExpiresAt: Date?
    /// The product the subscription renews into when it differs from `productID` (`renews_into_product_id`).
    public var pendingProductID: String?
    /// The identifier of the offer the period in force was bought with (or the last one redeemed).
    public var offer: String?
    /// `introductory`, `promotional`, `offer_code`, `win_back` (Apple `offerType` 1–4).
    public var offerType: String?
    public var expirationReason: ExpirationReason?
    /// When the provider first reported a failed renewal payment still being retried (Stripe
    /// `past_due`, Apple billing retry); cleared once paid.
    public var billingIssueDetectedAt: Date?
    public var ownership: Ownership?
    public var priceIncreaseStatus: PriceIncreaseStatus?
    /// The `signedDate` of the renewal info the renewal fields were taken from: older renewal info
    /// never overwrites them.
    public var renewalInfoSignedAt: Date?
    /// The provider time of the newest event applied.
    public var lastEventTime: Date?

    public init(
        entityKey: String, userID: String?, productID: String, productType: ProductType, source: PurchaseSource,
        environment: PurchaseEnvironment = .production, status: EntitlementStatus
    ) {
        self.entityKey = entityKey
        self.userID = userID
        self.productID = productID
        self.productType = productType
        self.source = source
        self.environment = environment
        self.status = status
    }

    /// What apps gate on, from the status **and** the clock (docs/TRANSITIONS.md): `active`, `trialing`
    /// and `cancelled` until `expires_at` (none for a lifetime purchase), `grace_period` until the
    /// grace period ends, each plus `leeway` for a renewal the provider reports just after the
    /// period ends; every other status never. A missed ending event never grants access beyond
    /// the period paid for.
    ///
    /// - Parameters:
    ///   - now: the time of the question.
    ///   - leeway: how long past its end a period still counts (`ENTITLEMENT_LEEWAY_SECONDS`).
    public func isActive(at now: Date, leeway: TimeInterval = 0) -> Bool {
        switch status {
        case .active, .trialing, .cancelled: expiresAt.map { $0.addingTimeInterval(leeway) > now } ?? true
        case .gracePeriod: (gracePeriodExpiresAt ?? expiresAt).map { $0.addingTimeInterval(leeway) > now } ?? true
        case .pastDue, .paused, .expired, .revoked, .refunded: false
        }
    }
}

/// One payment in the ledger, as stored in `transactions`.
public struct TransactionState: Sendable, Equatable {
    public var source: PurchaseSource
    /// Set from the provider's payload; the ledger keeps each environment's ids apart.
    public var environment: PurchaseEnvironment
    /// The provider's id: PaymentIntent, Checkout Session, invoice, SetupIntent, or Apple `transactionId`.
    public var providerTransactionID: String
    public var entitlementKey: String?
    public var userID: String?
    public var productID: String?
    public var productType: ProductType?
    public var status: TransactionStatus
    /// ISO 4217 minor units of `currency` (``CurrencyMinorUnits``): cents for USD, yen for JPY,
    /// fils for KWD; Apple's milliunits are converted to them.
    public var amount: Int64?
    public var currency: String?
    public var purchasedAt: Date?
    public var refundedAt: Date?
    /// How much of `amount` was refunded (cumulative); a partial refund keeps the status.
    public var amountRefunded: Int64?
    /// The end of the subscription period this payment paid for, when it is one.
    public var periodEnd: Date?
    /// How many of the product it bought, when more than one (Apple's and Google Play's
    /// `quantity`); `nil` is one. A currency grant is the product's amounts times it.
    public var quantity: Int?
    /// How many of `quantity` were refunded while the rest stands (Google Play's quantity-based
    /// partial refund); `nil` is none. A currency grant takes back their share.
    public var quantityRefunded: Int?
    /// Whether it is a subscription's free trial period, as the provider marks one (Apple's
    /// `offerDiscountType` `FREE_TRIAL`, Stripe's trial checkout, Google Play's `offerPhase.freeTrial`):
    /// never inferred from an amount of 0, which a period paid by a 100 % coupon or a balance has too.
    /// A trial period's currency grant is the product's trial amounts.
    public var isTrial = false
    public var lastEventTime: Date?

    public init(
        source: PurchaseSource, providerTransactionID: String, environment: PurchaseEnvironment = .production,
        status: TransactionStatus
    ) {
        self.source = source
        self.environment = environment
        self.providerTransactionID = providerTransactionID
        self.status = status
    }

    /// Takes `userID`, given late to the entitlement `entitlementKey`'s transactions, when it
    /// reaches this one: a transaction of that entitlement with no user yet (as the `UPDATE` of
    /// ``StateStore/assignUser(_:toTransactionsOf:)`` and `sluice_assign_held_users` choose). Returns whether it did.
    public mutating func takeUser(_ userID: String, assignedTo entitlementKey: String) -> Bool {
        guard self.entitlementKey == entitlementKey, self.userID == nil else { return false }
        self.userID = userID
        return true
    }
}
