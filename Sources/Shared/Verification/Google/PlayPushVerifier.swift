// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import NIOCore
import NIOFoundationCompat

/// Verifies a Google Play real-time developer notification pushed by Cloud Pub/Sub and turns it
/// into a queue row: the push's OIDC token first (``GooglePushAuthentication``), then the body,
/// then the notification's `packageName` against `GOOGLE_PLAY_PACKAGE_NAMES`.
///
/// The row is keyed by Pub/Sub's `messageId`, the same on every redelivery, and ordered by the
/// purchase token. Its environment is left open: whether a purchase is a test one is known only
/// from the state the worker fetches.
public struct PlayPushVerifier: Sendable {
    /// The stored form of a verified push: Pub/Sub's message as it came, nothing else.
    struct StoredPush: Codable {
        struct Message: Codable {
            var data: String
            var messageId: String
            var publishTime: String?
        }

        var message: Message
        var subscription: String?
    }

    public let authentication: GooglePushAuthentication
    public let packageNames: Set<String>

    public init(authentication: GooglePushAuthentication, packageNames: Set<String>) {
        self.authentication = authentication
        self.packageNames = packageNames
    }

    /// - Returns: the queue row of the push `body` authenticated by `authorization`.
    /// - Throws: ``Rejection``: the token's (``GooglePushAuthentication/verify(authorization:now:)``),
    ///   `malformed` for a body that is not a push of a notification, `wrong_package`.
    public func verify(body: ByteBuffer, authorization: String?, now: Date = Date()) async throws(Rejection) -> EventRecord {
        try await authentication.verify(authorization: authorization, now: now)
        let push: PlayPush
        do {
            push = try JSONDecoder().decode(PlayPush.self, from: body)
        } catch {
            throw Rejection(.malformed, "the body is not a Pub/Sub push {\"message\": {\"data\", \"messageId\"}, \"subscription\"}")
        }
        guard let messageID = push.message.id, !messageID.isEmpty, messageID.utf8.count <= 256, let data = push.message.data else {
            throw Rejection(.malformed, "the push's message has no messageId or data")
        }
        let notification = try push.notification()
        guard let packageName = notification.packageName, packageNames.contains(packageName) else {
            throw Rejection(.wrongPackage, "the notification's packageName is not in GOOGLE_PLAY_PACKAGE_NAMES")
        }
        let (type, purchaseToken) = notification.kind()
        let stored = StoredPush(
            message: .init(data: data, messageId: messageID, publishTime: push.message.publishTime), subscription: push.subscription)
        return EventRecord(
            source: .play, externalID: messageID, type: type.rawValue, eventTime: notification.eventTime ?? now,
            orderingKey: purchaseToken, payload: CanonicalJSON.encode(stored))
    }
}
