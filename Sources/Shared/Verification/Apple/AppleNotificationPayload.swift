// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// The decoded `signedPayload` of an App Store Server Notification V2 (the fields Sluice reads).
public struct AppleNotificationPayload: AppleSignedPayload, Equatable {
    public struct NotificationData: Decodable, Sendable, Equatable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var bundleVersion: String?
        public var environment: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
        public var status: Int?
        /// `CONSUMPTION_REQUEST`: why the customer asked for a refund (`UNINTENDED_PURCHASE`, …).
        public var consumptionRequestReason: String?
    }

    /// Present on `RENEWAL_EXTENSION` `SUMMARY` notifications instead of `data`.
    public struct Summary: Decodable, Sendable, Equatable {
        public var environment: String?
        public var appAppleId: Int64?
        public var bundleId: String?
    }

    /// Present on `RESCIND_CONSENT` notifications (and any about the app rather than a purchase)
    /// instead of `data`.
    public struct AppData: Decodable, Sendable, Equatable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var environment: String?
        public var signedAppTransactionInfo: String?
    }

    /// Present on `EXTERNAL_PURCHASE_TOKEN` notifications instead of `data`.
    public struct ExternalPurchaseToken: Decodable, Sendable, Equatable {
        public var externalPurchaseId: String?
        public var appAppleId: Int64?
        public var bundleId: String?
    }

    public static let displayName = "notification"

    public var notificationType: String
    public var subtype: String?
    public var notificationUUID: String
    public var version: String?
    public var signedDate: Date?
    public var data: NotificationData?
    public var summary: Summary?
    public var appData: AppData?
    public var externalPurchaseToken: ExternalPurchaseToken?

    /// `Production` or `Sandbox`, from whichever of `data`, `summary`, `appData`, `externalPurchaseToken`
    /// is present (an external purchase id that starts with `SANDBOX` is a Sandbox token).
    public var environment: String? {
        if let environment = data?.environment ?? summary?.environment ?? appData?.environment { return environment }
        if let id = externalPurchaseToken?.externalPurchaseId { return id.hasPrefix("SANDBOX") ? "Sandbox" : "Production" }
        return nil
    }

    public var bundleID: String? { data?.bundleId ?? summary?.bundleId ?? appData?.bundleId ?? externalPurchaseToken?.bundleId }
    public var appAppleID: Int64? {
        data?.appAppleId ?? summary?.appAppleId ?? appData?.appAppleId ?? externalPurchaseToken?.appAppleId
    }
}
