// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared

/// Follows a quantity-based partial refund of a Google Play one-time purchase (`refundType` 2, or
/// a listed void with a `voidedQuantity`). Neither the push nor the listing says how many of the
/// purchase were refunded in all; the purchase's state does (`quantity` less
/// `refundableQuantity`). This fetches that state and makes its `play_purchase` row, which
/// ``PlayPurchaseHandler`` applies: the transaction's `quantity_refunded`, and the take-back of
/// that share of its currency grant (``CurrencyGrantDecision``).
struct PlayPartialRefunds: Sendable {
    let api: PlayDeveloperAPI
    let client: PostgresClient
    let logger: Logger

    /// The purchase's state row after `voided`, keyed after the void's own row, so that a void
    /// pushed and listed is followed once. `nil` when the void is not a partial refund, when nothing
    /// here knows the purchase, applied or waiting (its state, when it comes, carries the count), or when
    /// Google no longer knows it or refuses to say (a `4xx`, logged: the void itself is still
    /// stored, and asking again would change nothing).
    ///
    /// - Throws: Google unavailable (no answer, `429`, `5xx`), for the caller to try again later.
    func stateRecord(after voided: PlayPurchaseRecord.Voided, token: String, packageName: String) async throws -> EventRecord? {
        guard voided.isPartial, let productID = try await productID(of: token) else { return nil }
        let answer: ByteBuffer?
        do {
            answer = try await api.product(packageName: packageName, productID: productID, token: token)
        } catch let error as ProviderAPIError where !error.isUnavailable {
            logger.warning("Google refused the purchase's state after a partial refund: its count is not taken", metadata: [
                "status": "\(error.status ?? 0)", "product_id": "\(productID)",
            ])
            return nil
        }
        guard let answer else { return nil }
        try PlayNotificationHandler.checkIsObject(answer)
        return PlayPurchaseRecord(
            cause: PlayNotificationType.voidedPurchase.rawValue, fetchedAt: Date(), kind: .product, packageName: packageName,
            productID: productID, purchaseToken: token, purchase: answer
        ).record(externalID: Self.externalID(after: voided, token: token))
    }

    /// The state row's key: `after:` and the void's.
    static func externalID(after voided: PlayPurchaseRecord.Voided, token: String) -> String {
        "after:" + PlayPurchaseRecord.voidedExternalID(voided, token: token)
    }

    /// The Play product id of the purchase: its entitlement's, found by the token's link in any
    /// environment; else, before any state of it was applied, the one a `play_purchase` row of it
    /// waiting in the queue names (a state fetched before the refund, applied after it: without
    /// this, the refund would be followed by no state and its share never taken back).
    private func productID(of token: String) async throws -> String? {
        let kind = ProviderLink.Kind.playPurchaseToken.rawValue
        let source = EventSource.playPurchase.rawValue
        // The second part reaches a token's rows not applied yet through the queue's partial
        // indexes, one per state, each in its own OR arm (as TimelineReader does); `json`, not
        // `jsonb`, so an answer holding a `\u0000` escape still reads.
        let rows = try await client.query(
            """
            SELECT product_id FROM (
                SELECT e.product_id, 0 AS rank FROM provider_links l JOIN entitlements e ON e.entity_key = l.entitlement_key
                WHERE l.kind = \(kind) AND l.external_id = \(token)
                UNION ALL
                SELECT convert_from(q.payload, 'UTF8')::json ->> 'productId', 1 FROM events q
                WHERE (q.state = 'pending' OR q.state = 'running' OR q.state = 'dead') AND q.ordering_key = \(token) AND q.source = \(source)
            ) found WHERE product_id IS NOT NULL ORDER BY rank LIMIT 1
            """, logger: logger)
        for try await productID in rows.decode(String.self) { return productID }
        return nil
    }
}
