// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// Which event, if any, announces that an entitlement went from `before` to `after`: a pure
/// decision, tested as a table (`EntitlementChangeTests`).
///
/// Nothing is announced when nothing the read API shows changed, `is_active` included: a
/// duplicate or stale provider event emits nothing. The first rule that fits names the event, in
/// this order: a new entitlement; a move to another user; a change of status; a later
/// `expires_at`; a change of product; access gained or lost by the clock; anything else visible.
enum EntitlementChange {
    /// - Parameters:
    ///   - before: the stored entitlement before the change, `nil` for a new one.
    ///   - after: the entitlement as saved.
    ///   - now: the time `is_active` is computed for, on both sides.
    ///   - leeway: `ENTITLEMENT_LEEWAY_SECONDS`.
    /// - Returns: the event type, or `nil` when the change is invisible.
    static func type(
        before: EntitlementState?, after: EntitlementState, now: Date, leeway: TimeInterval
    ) -> OutgoingEventType? {
        let isActive = after.isActive(at: now, leeway: leeway)
        guard let before else { return firstType(of: after, isActive: isActive) }
        let wasActive = before.isActive(at: now, leeway: leeway)
        guard Visible(before) != Visible(after) || wasActive != isActive else { return nil }

        if let previousUser = before.userID, after.userID != previousUser { return .entitlementTransferred }
        if before.userID == nil, after.userID != nil, isActive { return .entitlementGranted }
        if before.status != after.status, let type = statusChange(before, after) { return type }
        if let old = milliseconds(before.expiresAt), let new = milliseconds(after.expiresAt), new > old { return .entitlementRenewed }
        if before.productID != after.productID || before.pendingProductID != after.pendingProductID {
            return .entitlementProductChanged
        }
        if wasActive != isActive { return isActive ? .entitlementRenewed : .entitlementExpired }
        if before.billingIssueDetectedAt == nil, after.billingIssueDetectedAt != nil { return .entitlementBillingIssue }
        return .entitlementUpdated
    }

    /// The event of an entitlement seen for the first time: what it grants, or how it already ended.
    private static func firstType(of after: EntitlementState, isActive: Bool) -> OutgoingEventType {
        switch after.status {
        case .refunded: .entitlementRefunded
        case .revoked: .entitlementRevoked
        case .paused: .entitlementPaused
        case .pastDue: .entitlementBillingIssue
        case .expired: .entitlementExpired
        case .active, .trialing, .cancelled, .gracePeriod: isActive ? .entitlementGranted : .entitlementExpired
        }
    }

    /// The event a change of status means, or `nil` when the status change alone names none.
    private static func statusChange(_ before: EntitlementState, _ after: EntitlementState) -> OutgoingEventType? {
        switch (before.status, after.status) {
        case (_, .refunded): .entitlementRefunded
        case (_, .revoked): .entitlementRevoked
        case (_, .expired): .entitlementExpired
        case (_, .paused): .entitlementPaused
        case (.paused, _): .entitlementResumed
        case (.refunded, _): .entitlementRefundReversed
        case (.revoked, _): .entitlementReinstated
        case (_, .gracePeriod): .entitlementGracePeriodStarted
        case (_, .pastDue): .entitlementBillingIssue
        case (.pastDue, _), (.gracePeriod, _): .entitlementRecovered
        case (_, .cancelled): .entitlementCancelled
        case (.expired, _): .entitlementRenewed
        case (.cancelled, _):
            milliseconds(after.expiresAt) ?? 0 > milliseconds(before.expiresAt) ?? 0 ? .entitlementRenewed : .entitlementUncancelled
        case (.trialing, .active): .entitlementRenewed
        default: nil
        }
    }

    /// What the read API shows of an entitlement (`is_active` apart): two equal values read the same.
    private struct Visible: Equatable {
        var fields: [String?]

        init(_ e: EntitlementState) {
            let times = [e.expiresAt, e.purchasedAt, e.trialEndsAt, e.cancelledAt, e.gracePeriodExpiresAt, e.billingIssueDetectedAt]
            fields = [
                e.userID, e.email, e.productID, e.productType.rawValue, e.status.rawValue, e.source.rawValue, e.environment.rawValue,
                e.productType == .autoRenewable && e.willRenew == true ? "renews" : "ends", e.isTrial ? "trial" : "paid",
                e.pendingProductID, e.offer, e.offerType, e.expirationReason?.rawValue, (e.ownership ?? .purchased).rawValue,
                e.priceIncreaseStatus?.rawValue,
            ] + times.map { EntitlementChange.milliseconds($0).map(String.init) }
        }
    }

    /// A time to the millisecond, the providers' precision: a time that went through the
    /// database (microseconds) compares equal to the one decoded from the provider.
    private static func milliseconds(_ date: Date?) -> Int64? {
        date?.millisecondsSince1970
    }
}
