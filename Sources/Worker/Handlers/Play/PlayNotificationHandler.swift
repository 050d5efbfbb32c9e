// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared

/// Follows a stored Google Play push (`play`) to the purchase it points at: fetches the purchase's
/// state from the Play Developer API and stores it as a `play_purchase` row, which
/// ``PlayPurchaseHandler`` applies. A voided purchase is stored as it came (it is the fact); a
/// test notification is only recorded.
///
/// The fetch happens outside any transaction. The state row is keyed by the push's `messageId`, so
/// a retried attempt stores it once; the push's own row is completed by the pool.
struct PlayNotificationHandler: JobHandler {
    /// `nil` without `GOOGLE_PLAY_SERVICE_ACCOUNT_FILE`: pushes wait, retried, then dead-lettered
    /// (`worker dlq replay` once it is set).
    let api: PlayDeveloperAPI?
    let client: PostgresClient
    /// `EVENT_SIGNING_KEY`: only a push Sluice stored is followed, and the row stored carries its proof.
    var proof: EventProof?
    let logger: Logger

    func handle(_ job: ClaimedJob, completion: JobCompletion) async throws {
        if let refusal = proof?.refusal(of: job) { throw refusal }
        let notification = try Self.notification(of: job)
        let (type, purchaseToken) = notification.kind()
        guard let purchaseToken, type != .test else {
            logger.info("Google Play notification recorded", metadata: ["event_id": "\(job.id)", "type": "\(type)"])
            return
        }
        guard let packageName = notification.packageName else { throw Rejection(.malformed, "the notification names no packageName") }
        let record: PlayPurchaseRecord
        let externalID: String
        if let voided = notification.voidedPurchaseNotification {
            let void = PlayPurchaseRecord.Voided(
                orderId: voided.orderId, voidedTimeMillis: notification.eventTimeMillis, partial: voided.refundType == 2 ? true : nil)
            record = PlayPurchaseRecord(
                cause: type.rawValue, fetchedAt: Date(), kind: voided.productType == 2 ? .product : .subscription, packageName: packageName,
                productID: nil, purchaseToken: purchaseToken, voided: void, purchase: nil)
            // The same key as voidedpurchases.list's: a void pushed and listed is one row.
            externalID = PlayPurchaseRecord.voidedExternalID(void, token: purchaseToken)
        } else {
            guard let api else {
                throw AttemptFailure(reason: "GOOGLE_PLAY_SERVICE_ACCOUNT_FILE is not set: the purchase's state cannot be fetched")
            }
            let kind: PlayProductKind = notification.subscriptionNotification != nil ? .subscription : .product
            let productID = notification.oneTimeProductNotification?.sku
            let answer: ByteBuffer?
            switch kind {
            case .subscription:
                answer = try await api.subscription(packageName: packageName, token: purchaseToken)
            case .product:
                guard let productID else { throw Rejection(.malformed, "a one-time product notification without its sku") }
                answer = try await api.product(packageName: packageName, productID: productID, token: purchaseToken)
            }
            guard let answer else {
                logger.info("Google no longer knows the purchase", metadata: ["event_id": "\(job.id)", "type": "\(type)"])
                return
            }
            // Stored as it came, so it must be what Google documents: one JSON object.
            guard (try? JSONSerialization.jsonObject(with: Data(buffer: answer))) is [String: Any] else {
                throw AttemptFailure(reason: "the Play Developer API answered something that is not a JSON object")
            }
            record = PlayPurchaseRecord(
                cause: type.rawValue, fetchedAt: Date(), kind: kind, packageName: packageName, productID: productID, purchaseToken: purchaseToken, purchase: answer)
            externalID = "push:" + (job.externalID ?? String(job.id))
        }
        let stored = try await EventStore(client: client, proof: proof, logger: logger).insert([record.record(externalID: externalID)])
        logger.info("Google Play purchase state stored", metadata: [
            "event_id": "\(job.id)", "type": "\(type)", "result": "\(stored.first.map { "\($0)" } ?? "?")",
        ])
    }

    /// The push's notification, from the stored push.
    static func notification(of job: ClaimedJob) throws -> PlayDeveloperNotification {
        do {
            return try JSONDecoder().decode(PlayPush.self, from: job.payload).notification()
        } catch let rejection as Rejection {
            throw rejection
        } catch {
            throw Rejection(.malformed, "the row is not a stored Pub/Sub push")
        }
    }
}
