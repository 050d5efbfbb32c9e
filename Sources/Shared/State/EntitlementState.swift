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
    public var status: EntitlementStatus
    public var expiresAt: Date?
    public var purchasedAt: Date?
    public var willRenew: Bool?
    public var isTrial = false
    public var trialEndsAt: Date?
    public var cancelledAt: Date?
    public var gracePeriodExpiresAt: Date?
    public var pendingProductID: String?
    public var offer: String?
    /// The provider time of the newest event applied.
    public var lastEventTime: Date?

    public init(
        entityKey: String, userID: String?, productID: String, productType: ProductType, source: PurchaseSource,
        status: EntitlementStatus
    ) {
        self.entityKey = entityKey
        self.userID = userID
        self.productID = productID
        self.productType = productType
        self.source = source
        self.status = status
    }

    /// What apps gate on, from the status **and** the clock (TRANSITIONS.md): `active`, `trialing`
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
    /// The provider's id: PaymentIntent, Checkout Session, invoice, SetupIntent, or Apple `transactionId`.
    public var providerTransactionID: String
    public var entitlementKey: String?
    public var userID: String?
    public var productID: String?
    public var productType: ProductType?
    public var status: TransactionStatus
    /// Minor units (cents); Apple prices are milli-units and are divided by 10 to match.
    public var amount: Int64?
    public var currency: String?
    public var purchasedAt: Date?
    public var refundedAt: Date?
    /// How much of `amount` was refunded (cumulative); a partial refund keeps the status.
    public var amountRefunded: Int64?
    /// The end of the subscription period this payment paid for, when it is one.
    public var periodEnd: Date?
    public var lastEventTime: Date?

    public init(source: PurchaseSource, providerTransactionID: String, status: TransactionStatus) {
        self.source = source
        self.providerTransactionID = providerTransactionID
        self.status = status
    }
}
