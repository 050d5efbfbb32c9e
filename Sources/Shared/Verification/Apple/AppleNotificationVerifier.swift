// SPDX-License-Identifier: Apache-2.0
import Foundation
public import NIOCore
import NIOFoundationCompat
import Crypto

/// Verifies what Apple and apps send — App Store Server Notifications V2 and synced StoreKit 2
/// transactions — and turns them into queue rows.
///
/// Beyond the JWS itself (``AppleJWSVerifier``) it checks that the bundle id is one of ours, the
/// environment is the endpoint's (notifications: Production, or Sandbox for `?sandbox=true`;
/// StoreKit syncs: either, as the signed transaction says), the `appAppleId` on Production
/// payloads when one is configured, and the nested transaction, renewal info and app
/// transaction, which are JWS of their own.
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

    /// The body of `POST /v1/webhooks/appstore-notifications`, and the payload stored for it:
    /// only the verified JWS, whatever else the request carried.
    struct NotificationBody: Codable {
        var signedPayload: String
    }

    /// The body of `POST /v1/iap/storekit-transactions`, and the payload stored for it: the
    /// verified transaction and the normalised `user_id`, nothing else.
    struct StoreKitBody: Codable {
        var signed_transaction: String
        var user_id: String
        /// Stored only for a transaction found through a StoreKit 1 receipt
        /// (`POST /v1/iap/receipts`), never read from a request: see
        /// ``verifyStoreKitTransaction(body:viaReceipt:)``.
        var via_receipt: Bool? = nil
    }

    /// A `user_id` as stored and compared: a UUID (an `appAccountToken`) in lowercase, so its case
    /// variants are one user; any other id as it is (apps' ids may be case-sensitive).
    static func normalizedUserID(_ text: String) -> String {
        UUID(uuidString: text) != nil ? text.lowercased() : text
    }

    /// The event type stored for a synced StoreKit transaction.
    public static let storeKitEventType = AppleNotificationType.storeKitTransaction.rawValue

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
        if let signed = notification.appData?.signedAppTransactionInfo {
            let app = try await jws.verify(signed, as: AppleAppTransactionPayload.self)
            try checkEnvironment(app.receiptType, sandbox: sandbox, of: "app transaction")
            try checkBundle(app.bundleId, of: "app transaction")
        }
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
            orderingKey: orderingKey, payload: CanonicalJSON.encode(NotificationBody(signedPayload: request.signedPayload)))
    }

    /// Verifies a StoreKit sync body `{"signed_transaction":"<JWS>","user_id":"…"}`, from either
    /// environment (TestFlight and App Review builds buy in Sandbox and use the same backend).
    ///
    /// - Returns: the queue row, the `transactionId`, and the transaction's `appAccountToken` when
    ///   `user_id` is not that token: the caller stores the row only if the token is registered
    ///   to `user_id` (``AppAccountTokens``), else refuses it as
    ///   ``Rejection/Reason/userMismatch``. The row is keyed by the transaction, its `signedDate`
    ///   and the user, so the same sync twice is one event while a re-signed transaction (after a
    ///   refund or an upgrade) or a restore to another account is a new one.
    /// - Parameter viaReceipt: the transaction was found through a StoreKit 1 receipt, whose
    ///   PKCS#7 signature is not checked (as Apple's own `ReceiptUtility` does not): whoever holds
    ///   a transaction id can make such a receipt, so the stored row says so, and the worker never
    ///   moves a purchase from the user who holds it for such a sync.
    public func verifyStoreKitTransaction(
        body: ByteBuffer, viaReceipt: Bool = false
    ) async throws(Rejection) -> (record: EventRecord, transactionID: String, userID: String, tokenOfAnotherUser: String?) {
        let request: StoreKitBody
        do {
            request = try JSONDecoder().decode(StoreKitBody.self, from: body)
        } catch {
            throw Rejection(.malformed, "the body must be JSON {\"signed_transaction\": \"<JWS>\", \"user_id\": \"…\"}")
        }
        if let problem = UserIDRule.problem(with: request.user_id) { throw Rejection(.malformed, problem) }
        let userID = Self.normalizedUserID(request.user_id)
        let transaction = try await verifyTransaction(request.signed_transaction)
        let token = transaction.appAccountToken.flatMap { $0.isEmpty || $0.lowercased() == userID.lowercased() ? nil : $0 }
        let record = EventRecord(
            source: .storekit, externalID: Self.syncKey(transaction, userID: userID), type: Self.storeKitEventType,
            environment: transaction.environment, eventTime: transaction.signedDate,
            orderingKey: transaction.originalTransactionId ?? transaction.transactionId,
            payload: CanonicalJSON.encode(StoreKitBody(
                signed_transaction: request.signed_transaction, user_id: userID, via_receipt: viaReceipt ? true : nil)))
        return (record, transaction.transactionId, userID, token)
    }

    /// Verifies a signed transaction of either environment as a sync's: its chain and signature,
    /// a Production or Sandbox environment, a configured bundle id and a usable id.
    public func verifyTransaction(_ signedTransaction: String) async throws(Rejection) -> AppleTransactionPayload {
        let transaction = try await jws.verify(signedTransaction, as: AppleTransactionPayload.self)
        guard PurchaseEnvironment(apple: transaction.environment) != nil else {
            throw Rejection(
                .wrongEnvironment, "the transaction is for \(transaction.environment?.prefix(20) ?? "no environment"), not Production or Sandbox")
        }
        try checkBundle(transaction.bundleId, of: "transaction")
        guard !transaction.transactionId.isEmpty, transaction.transactionId.utf8.count <= 255 else {
            throw Rejection(.malformed, "the transactionId is empty or too long")
        }
        return transaction
    }

    /// Verifies one subscription of an App Store Server API status answer (Get All Subscription
    /// Statuses): its signed transaction and renewal info, exactly as a notification's.
    ///
    /// - Returns: the queue row of a reconciliation event (`SUBSCRIPTION_STATUS`, subtype the
    ///   status), keyed by the `originalTransactionId` and the newest `signedDate`, so asking twice
    ///   for an unchanged status is one event.
    public func verifySubscriptionStatus(
        status: Int, signedTransaction: String, signedRenewal: String?, sandbox: Bool
    ) async throws(Rejection) -> EventRecord {
        let transaction = try await jws.verify(signedTransaction, as: AppleTransactionPayload.self)
        try checkEnvironment(transaction.environment, sandbox: sandbox, of: "status transaction")
        try checkBundle(transaction.bundleId, of: "status transaction")
        var signedDates = [transaction.signedDate].compactMap { $0 }
        if let signedRenewal {
            let renewal = try await jws.verify(signedRenewal, as: AppleRenewalInfoPayload.self)
            if renewal.environment != nil { try checkEnvironment(renewal.environment, sandbox: sandbox, of: "status renewal info") }
            signedDates += [renewal.signedDate].compactMap { $0 }
        }
        guard let subtype = Self.subscriptionStatusNames[status] else {
            throw Rejection(.malformed, "the subscription status \(status) is not one Apple documents")
        }
        let originalID = transaction.originalTransactionId ?? transaction.transactionId
        let newest = signedDates.max()
        let millis = newest.map { String($0.millisecondsSince1970) } ?? "-"
        var body: [String: any Sendable] = [
            "status": status, "environment": sandbox ? "Sandbox" : "Production", "signedTransactionInfo": signedTransaction,
        ]
        body["signedRenewalInfo"] = signedRenewal
        let payload = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        var record = EventRecord(
            source: .apple, externalID: "status:\(originalID):\(millis)", type: Self.subscriptionStatusEventType, subtype: subtype,
            environment: sandbox ? "Sandbox" : "Production", eventTime: newest, orderingKey: originalID, payload: ByteBuffer(data: payload))
        record.origin = .reconciliation
        return record
    }

    /// The event type of a reconciliation from Apple's subscription status.
    public static let subscriptionStatusEventType = AppleNotificationType.subscriptionStatus.rawValue

    /// Apple's subscription `status` values, as the reconciliation event's subtype.
    public static let subscriptionStatusNames: [Int: String] = Dictionary(
        uniqueKeysWithValues: AppleSubscriptionStatus.allCases.map { ($0.rawValue, $0.name) })

    /// `<transactionId>/<signedDate ms>/<first 16 hex digits of SHA-256(user_id)>`: what makes two
    /// syncs the same event. The user is hashed to keep the key short and free of its bytes.
    static func syncKey(_ transaction: AppleTransactionPayload, userID: String) -> String {
        let signed = transaction.signedDate.map { String($0.millisecondsSince1970) } ?? "-"
        let user = SHA256.hash(data: Data(userID.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        return "\(transaction.transactionId)/\(signed)/\(user)"
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
