// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// Decodes the payload of an Apple JWS that ``AppleJWSVerifier`` already verified at ingest —
/// for the worker, which reads stored events. It checks nothing: never use it on input that was
/// not verified first.
public enum AppleSignedPayloadDecoder {
    /// - Throws: ``Rejection`` `malformed` when the JWS or its payload cannot be read.
    public static func decode<Payload: AppleSignedPayload>(_ compact: String, as: Payload.Type) throws -> Payload {
        let payload = try CompactJWS.payload(of: compact)
        do {
            return try AppleJSON.decoder.decode(Payload.self, from: Data(payload))
        } catch {
            throw Rejection(.malformed, "the stored \(Payload.displayName) cannot be decoded")
        }
    }

    /// The stored body of a notification, `{"signedPayload":"…"}`, with its nested transaction and renewal info.
    public static func notification(body: Data) throws -> (AppleNotificationPayload, AppleTransactionPayload?, AppleRenewalInfoPayload?) {
        let request = try JSONDecoder().decode(AppleNotificationVerifier.NotificationBody.self, from: body)
        let notification = try decode(request.signedPayload, as: AppleNotificationPayload.self)
        let transaction = try notification.data?.signedTransactionInfo.map { try decode($0, as: AppleTransactionPayload.self) }
        let renewal = try notification.data?.signedRenewalInfo.map { try decode($0, as: AppleRenewalInfoPayload.self) }
        return (notification, transaction, renewal)
    }

    /// The stored body of a StoreKit sync, `{"signed_transaction":"…","user_id":"…"}`.
    public static func storeKitSync(body: Data) throws -> (transaction: AppleTransactionPayload, userID: String, viaReceipt: Bool) {
        let request = try JSONDecoder().decode(AppleNotificationVerifier.StoreKitBody.self, from: body)
        return (try decode(request.signed_transaction, as: AppleTransactionPayload.self), request.user_id, request.via_receipt ?? false)
    }

    /// A stored reconciliation event (``AppleNotificationVerifier/verifySubscriptionStatus(status:signedTransaction:signedRenewal:sandbox:)``).
    public struct SubscriptionStatus: Sendable {
        public var status: Int
        public var environment: String
        public var transaction: AppleTransactionPayload
        public var renewal: AppleRenewalInfoPayload?
    }

    /// The stored body of a reconciliation event, or `nil` when `body` is not one.
    public static func subscriptionStatus(body: Data) throws -> SubscriptionStatus? {
        struct Body: Decodable {
            var status: Int
            var environment: String
            var signedTransactionInfo: String
            var signedRenewalInfo: String?
        }
        guard let stored = try? JSONDecoder().decode(Body.self, from: body) else { return nil }
        return SubscriptionStatus(
            status: stored.status, environment: stored.environment,
            transaction: try decode(stored.signedTransactionInfo, as: AppleTransactionPayload.self),
            renewal: try stored.signedRenewalInfo.map { try decode($0, as: AppleRenewalInfoPayload.self) })
    }
}
