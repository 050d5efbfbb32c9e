// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

/// `is_active` from the status and the clock (docs/TRANSITIONS.md), with the renewal leeway.
struct EntitlementActivityTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var status: EntitlementStatus
        /// Seconds from now; `nil` for none.
        var expires: TimeInterval?
        var graceEnds: TimeInterval? = nil
        var active: Bool
        var testDescription: String { "\(status.rawValue), expires \(expires.map { "\($0)" } ?? "never"), grace \(graceEnds.map { "\($0)" } ?? "-")" }
    }

    static let leeway: TimeInterval = 3_600

    static let rows: [Row] = [
        Row(status: .active, expires: 86_400, active: true),
        Row(status: .active, expires: nil, active: true),  // a lifetime purchase
        Row(status: .active, expires: -600, active: true),  // the renewal may still be on its way
        Row(status: .active, expires: -7_200, active: false),  // its ending event was missed
        Row(status: .trialing, expires: -7_200, active: false),
        Row(status: .cancelled, expires: 600, active: true),
        Row(status: .cancelled, expires: -7_200, active: false),
        Row(status: .gracePeriod, expires: -86_400, graceEnds: 86_400, active: true),
        Row(status: .gracePeriod, expires: -86_400, graceEnds: -7_200, active: false),
        Row(status: .gracePeriod, expires: -86_400, active: false),  // no grace end known: the period's end
        Row(status: .pastDue, expires: 86_400, active: false),
        Row(status: .paused, expires: 86_400, active: false),
        Row(status: .expired, expires: 86_400, active: false),
        Row(status: .revoked, expires: 86_400, active: false),
        Row(status: .refunded, expires: nil, active: false),
    ]

    @Test(arguments: rows)
    func isActiveFromStatusAndTime(_ row: Row) {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var e = EntitlementState(entityKey: "k", userID: "u", productID: "p", productType: .autoRenewable, source: .storeKit, status: row.status)
        e.expiresAt = row.expires.map(now.addingTimeInterval)
        e.gracePeriodExpiresAt = row.graceEnds.map(now.addingTimeInterval)
        #expect(e.isActive(at: now, leeway: Self.leeway) == row.active)
    }
}
