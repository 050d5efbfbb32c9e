// SPDX-License-Identifier: Apache-2.0
import Foundation
public import PostgresNIO

/// The columns of `entitlements` that ``EntitlementState`` holds, and how a row becomes one.
public enum EntitlementColumns {
    /// The columns, in the order every list of them is written: the reads here, the held save's
    /// JSON row (``HeldStateWrite``) and `sluice_save_held_states`'s columns, which
    /// `RowColumnsTests` checks against this.
    public static let names = [
        "entity_key", "user_id", "email", "product_id", "product_type", "source", "environment", "status", "expires_at",
        "purchased_at", "will_renew", "is_trial", "trial_ends_at", "cancelled_at", "grace_period_expires_at",
        "pending_product_id", "offer", "offer_type", "expiration_reason", "billing_issue_detected_at", "ownership",
        "price_increase_status", "renewal_info_signed_at", "last_event_time",
    ]

    /// The names as a SELECT list (fixed text, safe to splice).
    public static let list = names.joined(separator: ", ")

    public static func decode(_ row: PostgresRow) throws -> EntitlementState {
        let c = row.makeRandomAccess()
        var e = EntitlementState(
            entityKey: try c["entity_key"].decode(String.self),
            userID: try c["user_id"].decode(String?.self),
            productID: try c["product_id"].decode(String.self),
            productType: ProductType(rawValue: try c["product_type"].decode(String.self)) ?? .nonConsumable,
            source: PurchaseSource(rawValue: try c["source"].decode(String.self)) ?? .webCheckout,
            environment: PurchaseEnvironment(rawValue: try c["environment"].decode(String.self)) ?? .production,
            status: EntitlementStatus(rawValue: try c["status"].decode(String.self)) ?? .expired)
        e.email = try c["email"].decode(String?.self)
        e.expiresAt = try c["expires_at"].decode(Date?.self)
        e.purchasedAt = try c["purchased_at"].decode(Date?.self)
        e.willRenew = try c["will_renew"].decode(Bool?.self)
        e.isTrial = try c["is_trial"].decode(Bool.self)
        e.trialEndsAt = try c["trial_ends_at"].decode(Date?.self)
        e.cancelledAt = try c["cancelled_at"].decode(Date?.self)
        e.gracePeriodExpiresAt = try c["grace_period_expires_at"].decode(Date?.self)
        e.pendingProductID = try c["pending_product_id"].decode(String?.self)
        e.offer = try c["offer"].decode(String?.self)
        e.offerType = try c["offer_type"].decode(String?.self)
        e.expirationReason = try c["expiration_reason"].decode(String?.self).flatMap(ExpirationReason.init(rawValue:))
        e.billingIssueDetectedAt = try c["billing_issue_detected_at"].decode(Date?.self)
        e.ownership = try c["ownership"].decode(String?.self).flatMap(Ownership.init(rawValue:))
        e.priceIncreaseStatus = try c["price_increase_status"].decode(String?.self).flatMap(PriceIncreaseStatus.init(rawValue:))
        e.renewalInfoSignedAt = try c["renewal_info_signed_at"].decode(Date?.self)
        e.lastEventTime = try c["last_event_time"].decode(Date?.self)
        return e
    }
}

extension EntitlementState {
    /// The state as ``EntitlementColumns/decode(_:)`` reads it back once saved: each time rounded
    /// to the microseconds PostgreSQL keeps, the way PostgresNIO rounds it.
    public var asStored: EntitlementState {
        var e = self
        e.expiresAt = expiresAt?.asStoredInPostgres
        e.purchasedAt = purchasedAt?.asStoredInPostgres
        e.trialEndsAt = trialEndsAt?.asStoredInPostgres
        e.cancelledAt = cancelledAt?.asStoredInPostgres
        e.gracePeriodExpiresAt = gracePeriodExpiresAt?.asStoredInPostgres
        e.billingIssueDetectedAt = billingIssueDetectedAt?.asStoredInPostgres
        e.renewalInfoSignedAt = renewalInfoSignedAt?.asStoredInPostgres
        e.lastEventTime = lastEventTime?.asStoredInPostgres
        return e
    }
}

extension TransactionState {
    /// The state as ``TransactionColumns/decode(_:)`` reads it back once saved.
    public var asStored: TransactionState {
        var t = self
        t.purchasedAt = purchasedAt?.asStoredInPostgres
        t.refundedAt = refundedAt?.asStoredInPostgres
        t.periodEnd = periodEnd?.asStoredInPostgres
        t.lastEventTime = lastEventTime?.asStoredInPostgres
        return t
    }
}

/// The columns of `transactions` that ``TransactionState`` holds, and how a row becomes one.
public enum TransactionColumns {
    /// The columns, in the order every list of them is written, as ``EntitlementColumns/names``.
    public static let names = [
        "source", "environment", "provider_transaction_id", "entitlement_key", "user_id", "product_id", "product_type", "status",
        "amount", "currency", "purchased_at", "refunded_at", "amount_refunded", "period_end", "last_event_time", "quantity",
        "quantity_refunded", "is_trial",
    ]

    /// The names as a SELECT list (fixed text, safe to splice).
    public static let list = names.joined(separator: ", ")

    public static func decode(_ row: PostgresRow) throws -> TransactionState {
        let c = row.makeRandomAccess()
        var t = TransactionState(
            source: PurchaseSource(rawValue: try c["source"].decode(String.self)) ?? .webCheckout,
            providerTransactionID: try c["provider_transaction_id"].decode(String.self),
            environment: PurchaseEnvironment(rawValue: try c["environment"].decode(String.self)) ?? .production,
            status: TransactionStatus(rawValue: try c["status"].decode(String.self)) ?? .pending)
        t.entitlementKey = try c["entitlement_key"].decode(String?.self)
        t.userID = try c["user_id"].decode(String?.self)
        t.productID = try c["product_id"].decode(String?.self)
        t.productType = try c["product_type"].decode(String?.self).flatMap(ProductType.init(rawValue:))
        t.amount = try c["amount"].decode(Int64?.self)
        t.currency = try c["currency"].decode(String?.self)
        t.purchasedAt = try c["purchased_at"].decode(Date?.self)
        t.refundedAt = try c["refunded_at"].decode(Date?.self)
        t.amountRefunded = try c["amount_refunded"].decode(Int64?.self)
        t.periodEnd = try c["period_end"].decode(Date?.self)
        t.lastEventTime = try c["last_event_time"].decode(Date?.self)
        t.quantity = try c["quantity"].decode(Int32?.self).map(Int.init)
        t.quantityRefunded = try c["quantity_refunded"].decode(Int32?.self).map(Int.init)
        t.isTrial = try c["is_trial"].decode(Bool.self)
        return t
    }
}
