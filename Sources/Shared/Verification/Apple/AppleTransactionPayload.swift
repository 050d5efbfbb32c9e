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
}

/// A decoded `JWSRenewalInfo`: a notification's `signedRenewalInfo`.
public struct AppleRenewalInfoPayload: AppleSignedPayload, Equatable {
    public static let displayName = "renewal info"

    public var originalTransactionId: String?
    public var productId: String?
    public var autoRenewProductId: String?
    public var environment: String?
    public var signedDate: Date?
}
