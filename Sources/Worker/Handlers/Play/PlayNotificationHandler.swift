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
/// partial refund of a one-time purchase also has the purchase's state fetched after it
/// (``PlayPartialRefunds``), which says how many were refunded; a test notification is only
/// recorded.
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
        var records: [EventRecord] = []
        if let voided = notification.voidedPurchaseNotification {
            let void = PlayPurchaseRecord.Voided(
                orderId: voided.orderId, voidedTimeMillis: notification.eventTimeMillis, partial: voided.refundType == 2 ? true : nil)
            let kind: PlayProductKind = voided.productType == 2 ? .product : .subscription
            // The same key as voidedpurchases.list's: a void pushed and listed is one row.
            records.append(PlayPurchaseRecord(
                cause: type.rawValue, fetchedAt: Date(), kind: kind, packageName: packageName,
                productID: nil, purchaseToken: purchaseToken, voided: void, purchase: nil
            ).record(externalID: PlayPurchaseRecord.voidedExternalID(void, token: purchaseToken)))
            if void.isPartial, kind == .product {
                if let api {
                    let after = PlayPartialRefunds(api: api, client: client, logger: logger)
                    if let state = try await after.stateRecord(after: void, token: purchaseToken, packageName: packageName) { records.append(state) }
                } else {
                    logger.warning("a partial refund's count is not fetched: GOOGLE_PLAY_SERVICE_ACCOUNT_FILE is not set", metadata: ["event_id": "\(job.id)"])
                }
            }
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
            try Self.checkIsObject(answer)
            let order = try await Self.order(of: answer, kind: kind, packageName: packageName, api: api, logger: logger)
            records.append(PlayPurchaseRecord(
                cause: type.rawValue, fetchedAt: Date(), kind: kind, packageName: packageName, productID: productID, purchaseToken: purchaseToken,
                purchase: answer, order: order
            ).record(externalID: "push:" + (job.externalID ?? String(job.id))))
        }
        let stored = try await EventStore(client: client, proof: proof, logger: logger).insert(records)
        logger.info("Google Play purchase state stored", metadata: [
            "event_id": "\(job.id)", "type": "\(type)", "result": "\(stored.map { "\($0)" }.joined(separator: ", "))",
        ])
    }

    /// How long the Orders API is given, its own retries included, before the state is stored
    /// without the `Order`: well within a push attempt's time limit.
    static let orderTimeLimit: Duration = .seconds(10)

    /// The `Order` of a state that does not say what its order charged
    /// (``PlayOrder/orderToFetch(subscription:product:)``), fetched to store with it. Never a
    /// reason to hold the state up: an Orders API that refuses (the service account without
    /// "View financial data"), fails, takes longer than ``orderTimeLimit`` or answers something
    /// else leaves the amount unknown, logged. Only a shutdown stops the push's attempt (tried
    /// again, `Order` and all).
    static func order(
        of answer: ByteBuffer, kind: PlayProductKind, packageName: String, api: PlayDeveloperAPI, timeLimit: Duration = orderTimeLimit,
        logger: Logger
    ) async throws -> ByteBuffer? {
        let decoder = JSONDecoder()
        let orderID = switch kind {
        case .subscription: PlayOrder.orderToFetch(subscription: try? decoder.decode(PlaySubscriptionPurchase.self, from: answer), product: nil)
        case .product: PlayOrder.orderToFetch(subscription: nil, product: try? decoder.decode(PlayProductPurchase.self, from: answer))
        }
        guard let orderID else { return nil }
        do {
            guard let order = try await withTimeout(timeLimit, { try await api.order(packageName: packageName, orderID: orderID) }) else {
                logger.warning("Google does not know the order: its amount stays unknown", metadata: ["order_id": "\(orderID)"])
                return nil
            }
            try checkIsObject(order)
            return order
        } catch {
            if Task.isCancelled { throw CancellationError() }
            logger.warning("the order's amount is not fetched: it stays unknown", metadata: [
                "order_id": "\(orderID)", "error": "\(ErrorText.describe(error))",
            ])
            return nil
        }
    }

    /// An answer of the Play Developer API is stored as it came, spliced into the row, so it must
    /// be what Google documents: one JSON object, in UTF-8 without a byte-order mark (which
    /// `JSONSerialization` would take, and the row's reader would not).
    static func checkIsObject(_ answer: ByteBuffer) throws {
        let first = answer.readableBytesView.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        guard first == UInt8(ascii: "{"), (try? JSONSerialization.jsonObject(with: Data(buffer: answer))) is [String: Any] else {
            throw AttemptFailure(reason: "the Play Developer API answered something that is not a JSON object")
        }
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
