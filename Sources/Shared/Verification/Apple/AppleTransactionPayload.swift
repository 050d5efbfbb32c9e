// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// A decoded `JWSTransaction`: a notification's `signedTransactionInfo` or a StoreKit 2 `signedTransaction`.
public struct AppleTransactionPayload: AppleSignedPayload, Equatable {
    public static let displayName = "transaction"

    public var transactionId: String
    public var originalTransactionId: String?
    public var bundleId: String?
    public var productId: String?
    public var environment: String?
    public var signedDate: Date?
    public var type: String?
    public var appAccountToken: String?
    public var purchaseDate: Date?
    public var expiresDate: Date?
    public var revocationDate: Date?
    /// `REFUND_FULL`, `REFUND_PRORATED` or `FAMILY_REVOKE`.
    public var revocationType: String?
    /// With `REFUND_PRORATED`: the refunded share in milliunits of a percent (`67932` is 67.932 %).
    public var revocationPercentage: Int64?
    public var originalPurchaseDate: Date?
    /// Milli-units of the currency (9990 is 9.99), for all of `quantity`.
    public var price: Int64?
    /// How many of a consumable were bought in this transaction (1 unless the app asked for more).
    public var quantity: Int?
    public var currency: String?
    /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var offerType: Int?
    /// `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`.
    public var offerDiscountType: String?
    public var offerIdentifier: String?
    public var transactionReason: String?
    /// `PURCHASED` or `FAMILY_SHARED`.
    public var inAppOwnershipType: String?
    /// Set when a newer transaction of a higher service level replaced this one (an upgrade).
    public var isUpgraded: Bool?

    /// Whether the transaction is a free trial: a free offer, whether introductory, promotional, an
    /// offer code or a win-back (`offerDiscountType` `FREE_TRIAL` whatever the `offerType`).
    public var isFreeTrial: Bool { offerDiscountType == "FREE_TRIAL" }
}

/// A decoded `JWSRenewalInfo`: a notification's `signedRenewalInfo`.
public struct AppleRenewalInfoPayload: AppleSignedPayload, Equatable {
    public static let displayName = "renewal info"

    public var originalTransactionId: String?
    public var productId: String?
    public var autoRenewProductId: String?
    public var environment: String?
    public var signedDate: Date?
    /// 1 on, 0 off.
    public var autoRenewStatus: Int?
    public var gracePeriodExpiresDate: Date?
    public var isInBillingRetryPeriod: Bool?
    /// Why the subscription expired: 1 voluntary, 2 billing error, 3 no consent to a price
    /// increase, 4 product not for sale, 5 other.
    public var expirationIntent: Int?
    /// 0 the customer has not answered a price increase that needs consent, 1 consented (or none needed).
    public var priceIncreaseStatus: Int?
    /// The offer the next renewal is at (1 introductory, 2 promotional, 3 offer code, 4 win-back).
    public var offerType: Int?
    public var offerIdentifier: String?
}

/// A decoded `JWSAppTransaction`: the `signedAppTransactionInfo` of a notification's `appData`.
public struct AppleAppTransactionPayload: AppleSignedPayload, Equatable {
    public static let displayName = "app transaction"

    public var bundleId: String?
    public var appAppleId: Int64?
    /// The environment: `Production`, `Sandbox`, …
    public var receiptType: String?
    public var signedDate: Date?
}
