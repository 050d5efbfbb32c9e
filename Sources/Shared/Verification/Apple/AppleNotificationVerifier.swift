// SPDX-License-Identifier: Apache-2.0
import Foundation
public import NIOCore
import NIOFoundationCompat

/// Verifies what Apple and apps send — App Store Server Notifications V2 and synced StoreKit 2
/// transactions — and turns them into queue rows.
///
/// Beyond the JWS itself (``AppleJWSVerifier``) it checks that the bundle id is one of ours, the
/// environment is the endpoint's (Production, or Sandbox for `?sandbox=true`), the `appAppleId`
/// on Production payloads when one is configured, and the nested transaction and renewal info,
/// which are JWS of their own.
public struct AppleNotificationVerifier: Sendable {
    public struct Configuration: Sendable {
        /// `APPLE_BUNDLE_IDS`.
        public var bundleIDs: Set<String>
        /// `APPLE_APP_APPLE_ID`, checked on Production payloads.
        public var appAppleID: Int64?

        public init(bundleIDs: Set<String>, appAppleID: Int64? = nil) {
            self.bundleIDs = bundleIDs
            self.appAppleID = appAppleID
        }
    }

    /// The body of `POST /v1/webhooks/appstore-notifications`.
    struct NotificationBody: Decodable {
        var signedPayload: String
    }

    /// The body of `POST /v1/iap/storekit-transactions`.
    struct StoreKitBody: Decodable {
        var signed_transaction: String
        var user_id: String
    }

    /// The event type stored for a synced StoreKit transaction.
    public static let storeKitEventType = "STOREKIT_TRANSACTION"

    let jws: AppleJWSVerifier
    public let configuration: Configuration

    public init(chainVerifier: AppleChainVerifier, configuration: Configuration) {
        self.jws = AppleJWSVerifier(chainVerifier: chainVerifier)
        self.configuration = configuration
    }

    /// Verifies a notification body `{"signedPayload":"…"}`.
    ///
    /// - Parameter sandbox: whether the request came to the Sandbox endpoint (`?sandbox=true`).
    /// - Returns: the queue row, keyed by `notificationUUID`.
    public func verifyNotification(body: ByteBuffer, sandbox: Bool) async throws(Rejection) -> EventRecord {
        let request: NotificationBody
        do {
            request = try JSONDecoder().decode(NotificationBody.self, from: body)
        } catch {
            throw Rejection(.malformed, "the body must be JSON {\"signedPayload\": \"<JWS>\"}")
        }
        let notification = try await jws.verify(request.signedPayload, as: AppleNotificationPayload.self)
        try checkEnvironment(notification.environment, sandbox: sandbox, of: "notification")
        try checkBundle(notification.bundleID, of: "notification")
        if !sandbox, let expected = configuration.appAppleID, notification.appAppleID != expected {
            throw Rejection(.wrongApp, "the notification's appAppleId is not APPLE_APP_APPLE_ID")
        }
        var orderingKey: String?
        if let signed = notification.data?.signedTransactionInfo {
            let transaction = try await jws.verify(signed, as: AppleTransactionPayload.self)
            try checkEnvironment(transaction.environment, sandbox: sandbox, of: "nested transaction")
            try checkBundle(transaction.bundleId, of: "nested transaction")
            orderingKey = transaction.originalTransactionId ?? transaction.transactionId
        }
        if let signed = notification.data?.signedRenewalInfo {
            let renewal = try await jws.verify(signed, as: AppleRenewalInfoPayload.self)
            if renewal.environment != nil {
                try checkEnvironment(renewal.environment, sandbox: sandbox, of: "nested renewal info")
            }
            orderingKey = orderingKey ?? renewal.originalTransactionId
        }
        guard !notification.notificationUUID.isEmpty, notification.notificationUUID.utf8.count <= 255 else {
            throw Rejection(.malformed, "the notificationUUID is empty or too long")
        }
        return EventRecord(
            source: .apple, externalID: notification.notificationUUID, type: notification.notificationType,
            subtype: notification.subtype, environment: notification.environment, eventTime: notification.signedDate,
            orderingKey: orderingKey, payload: body)
    }

    /// Verifies a StoreKit sync body `{"signed_transaction":"<JWS>","user_id":"…"}`.
    ///
    /// - Returns: the queue row, keyed by `transactionId`.
    public func verifyStoreKitTransaction(body: ByteBuffer, sandbox: Bool) async throws(Rejection) -> EventRecord {
        let request: StoreKitBody
        do {
            request = try JSONDecoder().decode(StoreKitBody.self, from: body)
        } catch {
            throw Rejection(.malformed, "the body must be JSON {\"signed_transaction\": \"<JWS>\", \"user_id\": \"…\"}")
        }
        guard !request.user_id.isEmpty, request.user_id.utf8.count <= 255 else {
            throw Rejection(.malformed, "user_id must be 1 to 255 bytes")
        }
        let transaction = try await jws.verify(request.signed_transaction, as: AppleTransactionPayload.self)
        try checkEnvironment(transaction.environment, sandbox: sandbox, of: "transaction")
        try checkBundle(transaction.bundleId, of: "transaction")
        guard !transaction.transactionId.isEmpty, transaction.transactionId.utf8.count <= 255 else {
            throw Rejection(.malformed, "the transactionId is empty or too long")
        }
        return EventRecord(
            source: .storekit, externalID: transaction.transactionId, type: Self.storeKitEventType,
            environment: transaction.environment, eventTime: transaction.signedDate,
            orderingKey: transaction.originalTransactionId ?? transaction.transactionId, payload: body)
    }

    private func checkEnvironment(_ environment: String?, sandbox: Bool, of what: String) throws(Rejection) {
        let expected = sandbox ? "Sandbox" : "Production"
        guard environment == expected else {
            throw Rejection(
                .wrongEnvironment,
                "the \(what) is for \(environment?.prefix(20) ?? "no environment"), this endpoint takes \(expected)"
                    + (sandbox ? "" : " (use ?sandbox=true for Sandbox)"))
        }
    }

    private func checkBundle(_ bundleID: String?, of what: String) throws(Rejection) {
        guard let bundleID, configuration.bundleIDs.contains(bundleID) else {
            throw Rejection(.wrongBundle, "the \(what)'s bundleId is not in APPLE_BUNDLE_IDS")
        }
    }
}
