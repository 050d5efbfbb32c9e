// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import Logging
import PostgresNIO
import Shared

/// `consumption_requests` (sql/0037): Apple's `CONSUMPTION_REQUEST`s, recorded when applied and
/// answered by ``ConsumptionResponder``.
enum ConsumptionRequests {
    /// Records the request in the apply transaction, once per notification.
    static func record(_ event: AppleDecider.Event, transaction: AppleTransactionPayload, entitlementKey: String, in store: StateStore) async throws {
        try await store.flush()
        try await store.connection.query(
            """
            INSERT INTO consumption_requests (event_id, transaction_id, environment, bundle_id, entitlement_key, reason, requested_at)
            VALUES (\(event.eventID), \(transaction.transactionId), \(event.environment.rawValue), \(transaction.bundleId ?? ""),
                \(entitlementKey), \(event.consumptionRequestReason), \(event.time))
            ON CONFLICT (event_id) DO NOTHING
            """, logger: store.logger)
    }
}
