// SPDX-License-Identifier: Apache-2.0
import Foundation

/// `SubscriptionPurchaseV2`, the fields Sluice reads (Android Publisher v3). Times are RFC 3339
/// strings; `testPurchase` is an empty object whose presence is the signal.
public struct PlaySubscriptionPurchase: Decodable, Sendable, Equatable {
    public struct LineItem: Decodable, Sendable, Equatable {
        public struct AutoRenewingPlan: Decodable, Sendable, Equatable {
            public var autoRenewEnabled: Bool?
            public var recurringPrice: PlayMoney?
        }

        public struct OfferDetails: Decodable, Sendable, Equatable {
            public var basePlanId: String?
            public var offerId: String?
        }

        /// The pricing phase the item is in (`offerPhase`): one of `basePrice`, `introductoryPrice`,
        /// `freeTrial`, `prorationPeriod`, each an object whose presence is the signal (none of them
        /// carries an amount).
        public struct OfferPhase: Decodable, Sendable, Equatable {
            public var freeTrial: Empty?
            public var introductoryPrice: Empty?
            public var prorationPeriod: Empty?
        }

        public var productId: String?
        public var expiryTime: String?
        public var autoRenewingPlan: AutoRenewingPlan?
        public var offerDetails: OfferDetails?
        public var offerPhase: OfferPhase?
        public var latestSuccessfulOrderId: String?

        /// Whether the period in force is a free trial: its order charged nothing.
        public var isFreeTrial: Bool { offerPhase?.freeTrial != nil }

        /// Whether the period in force was charged a price the answer does not carry: an
        /// introductory price, or the prorated charge of a plan change. `recurringPrice` is the
        /// base plan's list price, which neither is, and Google gives no amount for either phase.
        public var isChargedAnUnstatedPrice: Bool { offerPhase?.introductoryPrice != nil || offerPhase?.prorationPeriod != nil }
    }

    public struct ExternalAccountIdentifiers: Decodable, Sendable, Equatable {
        public var obfuscatedExternalAccountId: String?
        public var obfuscatedExternalProfileId: String?
    }

    public struct CanceledStateContext: Decodable, Sendable, Equatable {
        public struct UserInitiated: Decodable, Sendable, Equatable {
            public var cancelTime: String?
        }

        public var userInitiatedCancellation: UserInitiated?
        /// Set when Google cancelled it, for example for a payment it could not collect (what
        /// subscriptions v1 documents as `cancelReason` 1, "a billing problem").
        public var systemInitiatedCancellation: Empty?
        /// Set when the developer cancelled it (`subscriptions.cancel`, or the console).
        public var developerInitiatedCancellation: Empty?
        /// Set when an upgrade, downgrade or re-signup replaced the subscription.
        public var replacementCancellation: Empty?
    }

    public struct Empty: Decodable, Sendable, Equatable {}

    public var startTime: String?
    /// `SUBSCRIPTION_STATE_…` (``PlaySubscriptionState``).
    public var subscriptionState: String?
    public var latestOrderId: String?
    public var linkedPurchaseToken: String?
    public var testPurchase: Empty?
    /// `ACKNOWLEDGEMENT_STATE_PENDING` or `ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED`.
    public var acknowledgementState: String?
    public var externalAccountIdentifiers: ExternalAccountIdentifiers?
    public var canceledStateContext: CanceledStateContext?
    public var lineItems: [LineItem]?
    public var regionCode: String?
}

/// `subscriptionState` of `SubscriptionPurchaseV2`, as Google documents it; a value Google adds
/// later is kept as it is.
public struct PlaySubscriptionState: RawRepresentable, Sendable, Hashable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let pending = Self(rawValue: "SUBSCRIPTION_STATE_PENDING")
    public static let active = Self(rawValue: "SUBSCRIPTION_STATE_ACTIVE")
    public static let paused = Self(rawValue: "SUBSCRIPTION_STATE_PAUSED")
    public static let inGracePeriod = Self(rawValue: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD")
    public static let onHold = Self(rawValue: "SUBSCRIPTION_STATE_ON_HOLD")
    public static let canceled = Self(rawValue: "SUBSCRIPTION_STATE_CANCELED")
    public static let expired = Self(rawValue: "SUBSCRIPTION_STATE_EXPIRED")
    public static let pendingPurchaseCanceled = Self(rawValue: "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED")
}

/// `ProductPurchase` (Android Publisher v3), the fields Sluice reads; `purchaseTimeMillis` is a
/// string of milliseconds, the states numbers.
public struct PlayProductPurchase: Decodable, Sendable, Equatable {
    public var purchaseTimeMillis: PlayMillis?
    /// 0 purchased, 1 canceled, 2 pending.
    public var purchaseState: Int?
    /// 0 yet to be acknowledged, 1 acknowledged.
    public var acknowledgementState: Int?
    public var orderId: String?
    /// Set only outside the standard flow: 0 test (a license tester), 1 promo, 2 rewarded.
    public var purchaseType: Int?
    public var productId: String?
    public var quantity: Int?
    public var obfuscatedExternalAccountId: String?
    public var regionCode: String?
    /// How many of `quantity` were not refunded: less than it after a quantity-based partial
    /// refund (Google counts full refunds too).
    public var refundableQuantity: Int?

    /// How many of a purchase of several were refunded while the rest stands; `nil` for none.
    public var quantityRefunded: Int? {
        guard let quantity, quantity > 1, let refundableQuantity, refundableQuantity >= 0, refundableQuantity < quantity else { return nil }
        return quantity - refundableQuantity
    }
}

/// Google's `Money`: `units` a string of whole units, `nanos` billionths.
public struct PlayMoney: Decodable, Sendable, Equatable {
    public var currencyCode: String?
    public var units: String?
    public var nanos: Int64?

    public init(currencyCode: String?, units: String?, nanos: Int64?) {
        self.currencyCode = currencyCode
        self.units = units
        self.nanos = nanos
    }

    /// The amount in ISO 4217 minor units of its currency (``CurrencyMinorUnits``), rounded as it rounds.
    /// `nil` for an amount Google's `Money` cannot be (`nanos` beyond ±999,999,999) or too large.
    public var minorUnits: Int64? {
        guard let currencyCode, let whole = Int64(units ?? "0"), whole.magnitude < 9_000_000_000 else { return nil }
        let nanos = nanos ?? 0
        guard nanos.magnitude < 1_000_000_000 else { return nil }
        return CurrencyMinorUnits(currencyCode).minorUnits(whole * 1_000_000_000 + nanos, givenIn: 9)
    }
}

/// One page of `purchases.voidedpurchases.list`.
public struct PlayVoidedPurchasesPage: Decodable, Sendable {
    public struct Pagination: Decodable, Sendable {
        public var nextPageToken: String?
    }

    public struct Voided: Decodable, Sendable {
        public var purchaseToken: String?
        public var orderId: String?
        public var purchaseTimeMillis: PlayMillis?
        public var voidedTimeMillis: PlayMillis?
        /// Set only for a quantity-based partial refund.
        public var voidedQuantity: Int?
    }

    public var tokenPagination: Pagination?
    public var voidedPurchases: [Voided]?
}
