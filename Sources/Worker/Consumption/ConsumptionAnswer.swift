// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// The body of Send Consumption Information (v2, `PUT /inApps/v2/transactions/consumption/{id}`,
/// Apple's `ConsumptionRequest`), decided from what Sluice knows of the purchase. Pure.
struct ConsumptionAnswer: Sendable, Equatable, Encodable {
    /// Apple's `deliveryStatus`.
    enum DeliveryStatus: String, Sendable, Encodable {
        case delivered = "DELIVERED", undeliveredQualityIssue = "UNDELIVERED_QUALITY_ISSUE", undeliveredWrongItem = "UNDELIVERED_WRONG_ITEM"
        case undeliveredServerOutage = "UNDELIVERED_SERVER_OUTAGE", undeliveredOther = "UNDELIVERED_OTHER"
    }

    /// Apple's `refundPreference`.
    enum RefundPreference: String, Sendable, Encodable {
        case decline = "DECLINE", grantFull = "GRANT_FULL", grantProrated = "GRANT_PRORATED"
    }

    /// `CONSUMPTION_REFUND_PREFERENCE`: what Sluice tells Apple the developer prefers.
    enum Policy: String, Sendable, CaseIterable {
        /// No preference sent (the default).
        case none
        case decline, grantFull = "grant_full", grantProrated = "grant_prorated"
        /// `GRANT_FULL` when less than a tenth was used, else `DECLINE`.
        case byConsumption = "by_consumption"
    }

    var customerConsented: Bool
    /// In milliunits: 0 … 100,000.
    var consumptionPercentage: Int?
    var deliveryStatus: DeliveryStatus
    var refundPreference: RefundPreference?
    var sampleContentProvided: Bool

    enum CodingKeys: String, CodingKey {
        case customerConsented, consumptionPercentage, deliveryStatus, refundPreference, sampleContentProvided
    }

    /// What the purchase looked like when Apple asked.
    struct Purchase: Sendable {
        /// The transaction Apple asks about, as Sluice holds it; `nil` when Sluice has no record of it.
        var transaction: TransactionState?
        /// What its catalog product granted (the grant's `applied`).
        var granted: [String: Int64]?
        /// The user's balances now, less what grants that expire still hold: a spend takes from
        /// those first (the lot that ends first), so what is left here is credits that do not expire.
        var balances: [String: Int64] = [:]
        /// What reached the user's balances after the grant and does not expire (later packs,
        /// deposits, give-backs): spent after the grant's, first in first out.
        var arrivedSince: [String: Int64] = [:]
        /// For a grant that expires (a subscription period's): what its own lots still hold, which
        /// is exactly what is left of it. `nil` for a grant that never expires.
        var grantLots: [String: Int64]?
        /// A subscription period's start and end, for the share of time used.
        var periodStart: Date?
        var periodEnd: Date?
    }

    /// The answer to send; `nil` while Sluice has no record of the purchase. It cannot say
    /// then whether it was delivered, and Apple reads any `deliveryStatus` as the developer's word
    /// (`UNDELIVERED_…` argues for the refund): the request waits for the purchase to be applied
    /// (its notification may come after the request), and is left unanswered if it never is.
    ///
    /// - Parameter now: when the answer is sent.
    static func decide(_ purchase: Purchase, policy: Policy, sampleContentProvided: Bool, now: Date) -> ConsumptionAnswer? {
        guard let transaction = purchase.transaction else { return nil }
        let delivered = [.succeeded, .refunded, .disputed].contains(transaction.status)
        let used = consumed(purchase, now: now)
        let preference: RefundPreference?
        switch policy {
        case .none: preference = nil
        case .decline: preference = .decline
        case .grantFull: preference = .grantFull
        case .grantProrated: preference = .grantProrated
        case .byConsumption: preference = used.map { $0 < 10_000 ? .grantFull : .decline } ?? nil
        }
        // The customer's consent: turning CONSUMPTION_RESPONSE on says the app obtained it (Apple
        // refuses any other value).
        return ConsumptionAnswer(
            customerConsented: true, consumptionPercentage: used, deliveryStatus: delivered ? .delivered : .undeliveredOther,
            refundPreference: preference, sampleContentProvided: sampleContentProvided)
    }

    /// How much of the purchase was used, in milliunits: of the currencies it granted, the largest
    /// share no longer in the balance; of a subscription period, the share of time gone; `nil`
    /// when neither is known.
    ///
    /// Credits are taken as spent as Sluice spends them: credits that expire first (the lot that
    /// ends first), then the others first in first out. What is left of a grant that expires is
    /// what its lots hold. What is left of one that does not is the newest credits' of the
    /// balance that does not expire, so the grant keeps only what that holds beyond what arrived
    /// after it: 500 granted, all spent, then another 500 bought: the balance of 500 is the second
    /// pack's, and the first was used in full; 500 granted, then a month's 1,000 that expire, 800
    /// spent: the 800 came from the month's, and the pack is unused.
    static func consumed(_ purchase: Purchase, now: Date) -> Int? {
        if let granted = purchase.granted, !granted.isEmpty {
            let shares = granted.compactMap { currency, amount -> Double? in
                guard amount > 0 else { return nil }
                let balance = max(purchase.balances[currency] ?? 0, 0)
                let left = purchase.grantLots.map { min(max($0[currency] ?? 0, 0), amount) }
                    ?? min(max(balance - max(purchase.arrivedSince[currency] ?? 0, 0), 0), amount)
                return Double(amount - left) / Double(amount)
            }
            if let share = shares.max() { return milliunits(share) }
        }
        if let start = purchase.periodStart, let end = purchase.periodEnd, end > start {
            return milliunits(now.timeIntervalSince(start) / end.timeIntervalSince(start))
        }
        return nil
    }

    private static func milliunits(_ share: Double) -> Int {
        Int((min(max(share, 0), 1) * 100_000).rounded())
    }
}
