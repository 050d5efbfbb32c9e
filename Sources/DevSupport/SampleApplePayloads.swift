// SPDX-License-Identifier: Apache-2.0
public import Foundation
import Shared

/// A `JWSTransaction` payload as Apple signs it (dates in milliseconds since 1970).
public struct SampleAppleTransaction: Codable, Sendable {
    public var transactionId: String
    public var originalTransactionId: String
    public var bundleId: String
    public var productId: String
    public var type: String
    public var environment: String
    public var purchaseDate: Int64
    public var originalPurchaseDate: Int64
    public var expiresDate: Int64?
    public var signedDate: Int64
    public var appAccountToken: String?
    public var revocationDate: Int64?
    public var revocationReason: Int?
    /// `REFUND_FULL`, `REFUND_PRORATED` or `FAMILY_REVOKE`.
    public var revocationType: String?
    /// Milliunits of a percent, with `REFUND_PRORATED`.
    public var revocationPercentage: Int64?
    public var offerType: Int?
    public var offerDiscountType: String?
    public var offerIdentifier: String?
    public var price: Int64?
    public var currency: String?
    public var quantity: Int = 1
    public var inAppOwnershipType: String = "PURCHASED"
    public var transactionReason: String = "PURCHASE"
    public var storefront: String = "USA"

    /// A monthly auto-renewable subscription bought now, in Sandbox.
    public init(
        transactionId: String, originalTransactionId: String? = nil, bundleId: String = "com.example.sluice",
        productId: String = "pro.monthly", type: String = "Auto-Renewable Subscription", environment: String = "Sandbox",
        purchaseDate: Date = Date(), expiresDate: Date? = nil, signedDate: Date = Date(), appAccountToken: String? = nil
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId ?? transactionId
        self.bundleId = bundleId
        self.productId = productId
        self.type = type
        self.environment = environment
        self.purchaseDate = purchaseDate.millisecondsSince1970
        self.originalPurchaseDate = purchaseDate.millisecondsSince1970
        let defaultExpiry = type == "Auto-Renewable Subscription" ? purchaseDate.addingTimeInterval(30 * 86_400) : nil
        self.expiresDate = (expiresDate ?? defaultExpiry)?.millisecondsSince1970
        self.signedDate = signedDate.millisecondsSince1970
        self.appAccountToken = appAccountToken
        self.price = 9_990
        self.currency = "USD"
    }
}

/// A `JWSRenewalInfo` payload.
public struct SampleAppleRenewalInfo: Codable, Sendable {
    public var originalTransactionId: String
    public var autoRenewProductId: String
    public var productId: String
    public var autoRenewStatus: Int
    public var environment: String
    public var signedDate: Int64
    public var recentSubscriptionStartDate: Int64?
    public var renewalDate: Int64?
    public var gracePeriodExpiresDate: Int64?
    public var isInBillingRetryPeriod: Bool?
    public var expirationIntent: Int?
    public var priceIncreaseStatus: Int?
    public var offerType: Int?
    public var offerIdentifier: String?

    public init(
        originalTransactionId: String, productId: String = "pro.monthly", autoRenewProductId: String? = nil,
        autoRenewStatus: Int = 1, environment: String = "Sandbox", signedDate: Date = Date()
    ) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId ?? productId
        self.autoRenewStatus = autoRenewStatus
        self.environment = environment
        self.signedDate = signedDate.millisecondsSince1970
    }
}

/// An App Store Server Notification V2 `responseBodyV2DecodedPayload`.
public struct SampleAppleNotification: Codable, Sendable {
    public struct NotificationData: Codable, Sendable {
        public var appAppleId: Int64?
        public var bundleId: String
        public var bundleVersion: String = "1"
        public var environment: String
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
        public var status: Int?
    }

    /// `appData` of `RESCIND_CONSENT`, present instead of `data`.
    public struct AppData: Codable, Sendable {
        public var appAppleId: Int64?
        public var bundleId: String
        public var environment: String
        public var signedAppTransactionInfo: String?
    }

    public var notificationType: String
    public var subtype: String?
    public var notificationUUID: String
    public var version: String = "2.0"
    public var signedDate: Int64
    public var data: NotificationData?
    public var appData: AppData?

    public init(
        type: String, subtype: String? = nil, uuid: String = UUID().uuidString.lowercased(),
        bundleId: String = "com.example.sluice", environment: String = "Sandbox", appAppleId: Int64? = 1_234_567_890,
        signedDate: Date = Date(), signedTransactionInfo: String? = nil, signedRenewalInfo: String? = nil
    ) {
        self.notificationType = type
        self.subtype = subtype
        self.notificationUUID = uuid
        self.signedDate = signedDate.millisecondsSince1970
        self.data = NotificationData(
            appAppleId: appAppleId, bundleId: bundleId, environment: environment,
            signedTransactionInfo: signedTransactionInfo, signedRenewalInfo: signedRenewalInfo, status: 1)
    }
}

/// A `JWSAppTransaction` payload (the app's own purchase record, `appData.signedAppTransactionInfo`).
public struct SampleAppleAppTransaction: Codable, Sendable {
    public var receiptType: String
    public var appAppleId: Int64?
    public var bundleId: String
    public var applicationVersion = "1"
    public var originalApplicationVersion = "1"
    public var receiptCreationDate: Int64
    public var originalPurchaseDate: Int64
    public var appTransactionId = "704289572311948001"
    public var originalPlatform = "iOS"
    public var signedDate: Int64

    public init(bundleId: String = "com.example.sluice", environment: String = "Sandbox", appAppleId: Int64? = 1_234_567_890, signedDate: Date = Date()) {
        self.receiptType = environment
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.receiptCreationDate = signedDate.millisecondsSince1970
        self.originalPurchaseDate = signedDate.millisecondsSince1970
        self.signedDate = signedDate.millisecondsSince1970
    }
}

extension AppleJWSSigner {
    /// A `RESCIND_CONSENT` notification body: `appData` with a signed app transaction, no `data`.
    public func rescindConsentBody(
        uuid: String = UUID().uuidString.lowercased(), bundleId: String = "com.example.sluice", environment: String = "Sandbox",
        appAppleId: Int64? = 1_234_567_890, signedDate: Date = Date()
    ) throws -> Data {
        var notification = SampleAppleNotification(
            type: "RESCIND_CONSENT", uuid: uuid, bundleId: bundleId, environment: environment, appAppleId: appAppleId, signedDate: signedDate)
        notification.data = nil
        let app = SampleAppleAppTransaction(bundleId: bundleId, environment: environment, appAppleId: appAppleId, signedDate: signedDate)
        notification.appData = .init(
            appAppleId: appAppleId, bundleId: bundleId, environment: environment, signedAppTransactionInfo: try sign(app))
        return try JSONEncoder().encode(["signedPayload": try sign(notification)])
    }

    /// A complete notification body `{"signedPayload":"…"}` whose nested transaction (and renewal
    /// info, for subscriptions) are signed too, all with the same environment and bundle.
    public func notificationBody(
        type: String, subtype: String? = nil, uuid: String = UUID().uuidString.lowercased(),
        transaction: SampleAppleTransaction, renewal: SampleAppleRenewalInfo? = nil,
        signedDate: Date = Date(), appAppleId: Int64? = 1_234_567_890
    ) throws -> Data {
        let notification = SampleAppleNotification(
            type: type, subtype: subtype, uuid: uuid, bundleId: transaction.bundleId, environment: transaction.environment,
            appAppleId: appAppleId, signedDate: signedDate,
            signedTransactionInfo: try sign(transaction), signedRenewalInfo: try renewal.map { try sign($0) })
        return try JSONEncoder().encode(["signedPayload": try sign(notification)])
    }
}
