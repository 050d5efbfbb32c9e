// SPDX-License-Identifier: Apache-2.0

/// The types of the events Sluice sends to endpoints (docs/webhooks.md), defined once.
///
/// `entitlement.*` events say that a user's access to a product changed and carry the
/// entitlement as the read API shows it after the change; `transaction.*` events say that a
/// payment in the ledger changed.
enum OutgoingEventType: String, Sendable, CaseIterable, Codable {
    /// A new entitlement, or one that first learned its user, that grants access.
    case entitlementGranted = "entitlement.granted"
    /// The paid period moved on: a renewal, a trial converted, a resubscription after expiry.
    case entitlementRenewed = "entitlement.renewed"
    /// The product, or the product the subscription renews into, changed.
    case entitlementProductChanged = "entitlement.product_changed"
    /// Renewal turned off: access lasts until `expires_at`.
    case entitlementCancelled = "entitlement.cancelled"
    /// Renewal turned back on before the period ended.
    case entitlementUncancelled = "entitlement.uncancelled"
    /// A renewal payment failed and no grace period applies: access ends now.
    case entitlementBillingIssue = "entitlement.billing_issue"
    /// A renewal payment failed and access continues while it is retried.
    case entitlementGracePeriodStarted = "entitlement.grace_period_started"
    /// Paid after a billing issue or a grace period.
    case entitlementRecovered = "entitlement.recovered"
    case entitlementPaused = "entitlement.paused"
    case entitlementResumed = "entitlement.resumed"
    /// Access ended: the provider said so, or the period ran out with no renewal (cause `clock`).
    case entitlementExpired = "entitlement.expired"
    /// The payment in force was refunded: access ends.
    case entitlementRefunded = "entitlement.refunded"
    /// Access was taken back: a dispute (Stripe), Family Sharing revoked (Apple).
    case entitlementRevoked = "entitlement.revoked"
    /// A refund was reversed: access is back.
    case entitlementRefundReversed = "entitlement.refund_reversed"
    /// A revocation was undone (a dispute won): access is back.
    case entitlementReinstated = "entitlement.reinstated"
    /// The entitlement now belongs to another user.
    case entitlementTransferred = "entitlement.transferred"
    /// Anything else the read API shows changed (an offer, a price increase's consent, the billing
    /// issue's date…) without changing access.
    case entitlementUpdated = "entitlement.updated"

    case transactionSucceeded = "transaction.succeeded"
    /// Fully or partly refunded (`amount_refunded`).
    case transactionRefunded = "transaction.refunded"
    case transactionDisputed = "transaction.disputed"
    /// A dispute ended (won: the payment stands; lost: it reads `refunded`).
    case transactionDisputeClosed = "transaction.dispute_closed"

    /// A user's in-app currency balances changed: a catalog product's grant on a purchase or
    /// renewal, its take-back on a refund, its give-back (docs/credits.md).
    case balanceChanged = "balance.changed"

    /// Whether an endpoint's type pattern (`entitlement.*`, `transaction.refunded`, `*`) takes it.
    static func pattern(_ pattern: String, matches type: String) -> Bool {
        if pattern == "*" { return true }
        if pattern.hasSuffix(".*") { return type.hasPrefix(pattern.dropLast()) }
        return pattern == type
    }

    /// Whether a pattern can match any type at all (a typo is refused when an endpoint is added).
    static func isValid(pattern: String) -> Bool {
        allCases.contains { Self.pattern(pattern, matches: $0.rawValue) }
    }
}
