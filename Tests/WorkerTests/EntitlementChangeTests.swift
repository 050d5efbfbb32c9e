// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

@testable import Worker

/// Which outgoing event each change of an entitlement announces (docs/webhooks.md), one row per
/// rule, without a database.
struct EntitlementChangeTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let leeway: TimeInterval = 3_600

    static func entitlement(
        _ status: EntitlementStatus, user: String? = "user_1", product: String = "pro.monthly", expiresIn days: Double? = 10,
        willRenew: Bool = true, pending: String? = nil, grace: Double? = nil, billingIssue: Bool = false
    ) -> EntitlementState {
        var e = EntitlementState(
            entityKey: "apple:1000", userID: user, productID: product, productType: .autoRenewable, source: .storeKit, status: status)
        e.expiresAt = days.map { now.addingTimeInterval($0 * 86_400) }
        e.willRenew = willRenew
        e.pendingProductID = pending
        e.gracePeriodExpiresAt = grace.map { now.addingTimeInterval($0 * 86_400) }
        e.billingIssueDetectedAt = billingIssue ? now.addingTimeInterval(-86_400) : nil
        return e
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var before: EntitlementState?
        var after: EntitlementState
        var expected: OutgoingEventType?
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "a new active entitlement is granted", before: nil, after: entitlement(.active), expected: .entitlementGranted),
        Row(name: "a new trial is granted", before: nil, after: entitlement(.trialing), expected: .entitlementGranted),
        Row(name: "first seen already expired", before: nil, after: entitlement(.expired), expected: .entitlementExpired),
        Row(name: "first seen active but its period long over", before: nil, after: entitlement(.active, expiresIn: -5), expected: .entitlementExpired),
        Row(name: "first seen refunded", before: nil, after: entitlement(.refunded), expected: .entitlementRefunded),
        Row(name: "first seen revoked", before: nil, after: entitlement(.revoked), expected: .entitlementRevoked),
        Row(name: "first seen in billing retry", before: nil, after: entitlement(.pastDue), expected: .entitlementBillingIssue),
        Row(name: "the same state again is silent (duplicate, stale)", before: entitlement(.active), after: entitlement(.active), expected: nil),
        Row(name: "a later expiry is a renewal", before: entitlement(.active), after: entitlement(.active, expiresIn: 40), expected: .entitlementRenewed),
        Row(name: "a trial that converts is renewed", before: entitlement(.trialing), after: entitlement(.active, expiresIn: 40), expected: .entitlementRenewed),
        Row(name: "renewal after expiry (resubscribe)", before: entitlement(.expired, expiresIn: -3), after: entitlement(.active, expiresIn: 30),
            expected: .entitlementRenewed),
        Row(name: "auto-renew off", before: entitlement(.active), after: entitlement(.cancelled, willRenew: false), expected: .entitlementCancelled),
        Row(name: "auto-renew on again", before: entitlement(.cancelled, willRenew: false), after: entitlement(.active), expected: .entitlementUncancelled),
        Row(name: "renewed while cancelled turned back on", before: entitlement(.cancelled, willRenew: false), after: entitlement(.active, expiresIn: 40),
            expected: .entitlementRenewed),
        Row(name: "billing retry without grace", before: entitlement(.active), after: entitlement(.pastDue, billingIssue: true), expected: .entitlementBillingIssue),
        Row(name: "billing retry with grace", before: entitlement(.active), after: entitlement(.gracePeriod, grace: 6, billingIssue: true),
            expected: .entitlementGracePeriodStarted),
        Row(name: "paid after billing retry", before: entitlement(.pastDue, billingIssue: true), after: entitlement(.active, expiresIn: 40),
            expected: .entitlementRecovered),
        Row(name: "paid in the grace period", before: entitlement(.gracePeriod, grace: 6, billingIssue: true), after: entitlement(.active, expiresIn: 40),
            expected: .entitlementRecovered),
        Row(name: "paused", before: entitlement(.active), after: entitlement(.paused), expected: .entitlementPaused),
        Row(name: "resumed", before: entitlement(.paused), after: entitlement(.active), expected: .entitlementResumed),
        Row(name: "expired by the provider", before: entitlement(.active), after: entitlement(.expired, expiresIn: -1), expected: .entitlementExpired),
        Row(name: "refunded", before: entitlement(.active), after: entitlement(.refunded), expected: .entitlementRefunded),
        Row(name: "revoked", before: entitlement(.active), after: entitlement(.revoked), expected: .entitlementRevoked),
        Row(name: "refund reversed", before: entitlement(.refunded), after: entitlement(.active), expected: .entitlementRefundReversed),
        Row(name: "dispute won", before: entitlement(.revoked), after: entitlement(.active), expected: .entitlementReinstated),
        Row(name: "another user", before: entitlement(.active, user: "a"), after: entitlement(.active, user: "b"), expected: .entitlementTransferred),
        Row(name: "a user learned late is a grant", before: entitlement(.active, user: nil), after: entitlement(.active, user: "a"), expected: .entitlementGranted),
        Row(name: "the product changed now", before: entitlement(.active), after: entitlement(.active, product: "pro.yearly"), expected: .entitlementProductChanged),
        Row(name: "the product it renews into changed", before: entitlement(.active), after: entitlement(.active, pending: "pro.yearly"),
            expected: .entitlementProductChanged),
        Row(name: "a renewal into the pending product is a renewal", before: entitlement(.active, pending: "pro.yearly"),
            after: entitlement(.active, product: "pro.yearly", expiresIn: 375), expected: .entitlementRenewed),
        Row(name: "a billing issue noted without a status change", before: entitlement(.active), after: entitlement(.active, billingIssue: true),
            expected: .entitlementBillingIssue),
        Row(name: "an offer recorded, access unchanged: an update", before: entitlement(.active),
            after: { var a = entitlement(.active); a.offer = "SPRING"; return a }(), expected: .entitlementUpdated),
        Row(name: "only the stored event time moved: silent", before: entitlement(.active),
            after: { var a = entitlement(.active); a.lastEventTime = now; a.renewalInfoSignedAt = now; return a }(), expected: nil),
    ]

    @Test(arguments: rows)
    func announces(_ row: Row) {
        #expect(EntitlementChange.type(before: row.before, after: row.after, now: Self.now, leeway: Self.leeway) == row.expected)
    }

    @Test func theLeewayKeepsAccessPastTheExpiryWithoutAnEvent() {
        let justExpired = Self.entitlement(.active, expiresIn: -0.01)
        #expect(justExpired.isActive(at: Self.now, leeway: Self.leeway))
        #expect(EntitlementChange.type(before: justExpired, after: justExpired, now: Self.now, leeway: Self.leeway) == nil)
    }

    @Test(arguments: [
        ("entitlement.*", "entitlement.renewed", true), ("entitlement.*", "transaction.refunded", false), ("*", "transaction.refunded", true),
        ("transaction.refunded", "transaction.refunded", true), ("transaction.refunded", "transaction.disputed", false),
        ("entitlement", "entitlement.renewed", false),
    ])
    func patterns(pattern: String, type: String, matches: Bool) {
        #expect(OutgoingEventType.pattern(pattern, matches: type) == matches)
    }

    @Test func everyTypeIsNamedOnceAndPatternsThatMatchNothingAreInvalid() {
        #expect(Set(OutgoingEventType.allCases.map(\.rawValue)).count == OutgoingEventType.allCases.count)
        #expect(OutgoingEventType.isValid(pattern: "entitlement.*"))
        #expect(!OutgoingEventType.isValid(pattern: "entitlements.*"))
        #expect(!OutgoingEventType.isValid(pattern: "entitlement.renew"))
    }
}

/// Which ledger event each change of a transaction announces.
struct TransactionChangeTests {
    static func t(_ status: TransactionStatus, refunded: Int64? = nil) -> TransactionState {
        var t = TransactionState(source: .webCheckout, providerTransactionID: "pi_1", status: status)
        t.amount = 999
        t.amountRefunded = refunded
        return t
    }

    /// A Google Play purchase of three, `refunded` of them refunded (no amount).
    static func three(refunded: Int? = nil, status: TransactionStatus = .succeeded) -> TransactionState {
        var t = TransactionState(source: .playStore, providerTransactionID: "GPA.1", status: status)
        t.quantity = 3
        t.quantityRefunded = refunded
        return t
    }

    @Test(arguments: [
        (nil, t(.succeeded), OutgoingEventType.transactionSucceeded),
        (t(.pending), t(.succeeded), .transactionSucceeded),
        (t(.succeeded), t(.succeeded), nil),
        (t(.succeeded), t(.refunded, refunded: 999), .transactionRefunded),
        (t(.succeeded), t(.succeeded, refunded: 100), .transactionRefunded),
        (t(.succeeded, refunded: 100), t(.succeeded, refunded: 100), nil),
        (t(.succeeded, refunded: 100), t(.succeeded, refunded: 300), .transactionRefunded),
        (nil, t(.refunded, refunded: 999), .transactionRefunded),
        (t(.succeeded), t(.disputed), .transactionDisputed),
        (t(.disputed), t(.succeeded), .transactionDisputeClosed),
        (t(.disputed), t(.refunded), .transactionDisputeClosed),
        (nil, t(.pending), nil),
        (t(.pending), t(.processing), nil),
        (t(.processing), t(.failed), nil),
        (three(), three(refunded: 1), .transactionRefunded),
        (three(refunded: 1), three(refunded: 2), .transactionRefunded),
        (three(refunded: 1), three(refunded: 1), nil),
        (nil, three(refunded: 1), .transactionSucceeded),
        (three(status: .refunded), three(refunded: 3, status: .refunded), nil),  // a state read after a full void
    ] as [(TransactionState?, TransactionState, OutgoingEventType?)])
    func announces(before: TransactionState?, after: TransactionState, expected: OutgoingEventType?) {
        #expect(TransactionChange.type(before: before, after: after) == expected)
    }
}

/// The rate limit's schedule: slots `1 / rate` apart, never in the past.
struct SendScheduleTests {
    @Test func slotsAreSpacedByTheRate() {
        var schedule = SendSchedule()
        #expect(schedule.reserve(now: 10, maxPerSecond: 4) == 0)
        #expect(schedule.reserve(now: 10, maxPerSecond: 4) == 0.25)
        #expect(schedule.reserve(now: 10, maxPerSecond: 4) == 0.5)
        #expect(abs(schedule.reserve(now: 10.6, maxPerSecond: 4) - 0.15) < 1e-9)
    }

    @Test func anIdleEndpointSendsAtOnce() {
        var schedule = SendSchedule()
        _ = schedule.reserve(now: 0, maxPerSecond: 1)
        #expect(schedule.reserve(now: 5, maxPerSecond: 1) == 0)
        #expect(schedule.nextFree == 6)
    }
}
