// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import PostgresNIO
import Shared

/// `play_acknowledgements` (sql/0040): purchases Google waits to see acknowledged, recorded when
/// applied and acknowledged by ``PlayAcknowledger``.
enum PlayAcknowledgements {
    struct Owed: Sendable, Equatable {
        var purchaseToken: String
        var packageName: String
        var kind: PlayProductKind
        var productID: String
        var environment: PurchaseEnvironment
        var entitlementKey: String
        var purchasedAt: Date
    }

    /// What an applied state owes Google: an acknowledgement when Google reports the purchase
    /// unacknowledged and it is paid for (a pending purchase is acknowledged once it is paid).
    static func owed(_ event: PlayDecider.Event, entitlementKey: String) -> Owed? {
        let record = event.record
        guard record.voided == nil else { return nil }
        if let subscription = event.subscription {
            let state = PlaySubscriptionState(rawValue: subscription.subscriptionState ?? "")
            guard subscription.acknowledgementState == "ACKNOWLEDGEMENT_STATE_PENDING",
                  [.active, .canceled, .inGracePeriod].contains(state),
                  let productID = subscription.lineItems?.first?.productId
            else { return nil }
            return Owed(
                purchaseToken: record.purchaseToken, packageName: record.packageName, kind: .subscription, productID: productID,
                environment: event.environment, entitlementKey: entitlementKey,
                purchasedAt: PlayDecider.date(subscription.startTime) ?? event.time)
        }
        if let product = event.product {
            guard product.acknowledgementState == 0, product.purchaseState == 0, let productID = product.productId ?? record.productID else {
                return nil
            }
            return Owed(
                purchaseToken: record.purchaseToken, packageName: record.packageName, kind: .product, productID: productID,
                environment: event.environment, entitlementKey: entitlementKey, purchasedAt: product.purchaseTimeMillis?.date ?? event.time)
        }
        return nil
    }

    /// Records it in the apply transaction, once per purchase token.
    static func record(_ owed: Owed, in store: StateStore) async throws {
        try await store.flush()
        try await store.connection.query(
            """
            INSERT INTO play_acknowledgements (purchase_token, package_name, product_kind, product_id, environment, entitlement_key, purchased_at)
            VALUES (\(owed.purchaseToken), \(owed.packageName), \(owed.kind.rawValue), \(owed.productID), \(owed.environment.rawValue),
                \(owed.entitlementKey), \(owed.purchasedAt))
            ON CONFLICT (purchase_token) DO NOTHING
            """, logger: store.logger)
    }
}
