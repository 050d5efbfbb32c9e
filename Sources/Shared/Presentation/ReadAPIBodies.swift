// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// RFC 3339 UTC, as the read API writes times.
func rfc3339(_ date: Date?) -> String? {
    date.map { $0.formatted(.iso8601) }
}

/// One entitlement in the read API's shape; unknown values are `null`, never left out.
public struct EntitlementBody: Encodable, Sendable {
    public let entitlement: StateReader.Entitlement
    public let isActive: Bool

    /// - Parameters:
    ///   - now: the time `is_active` is computed for.
    ///   - leeway: `ENTITLEMENT_LEEWAY_SECONDS`.
    ///   - sandboxAccess: whether a sandbox entitlement counts (`SANDBOX_ACCESS`).
    ///   - userID: who holds it, for the sandbox rule: the user asked about, or the state's own.
    public init(_ entitlement: StateReader.Entitlement, now: Date, leeway: TimeInterval, sandboxAccess: SandboxAccess, userID: String?) {
        self.entitlement = entitlement
        self.isActive = entitlement.state.isActive(at: now, leeway: leeway)
            && sandboxAccess.grants(entitlement.state.environment, to: userID ?? entitlement.state.userID)
    }

    enum CodingKeys: String, CodingKey {
        case id, product_id, product_type, source, environment, status, is_active, expires_at, purchased_at, will_renew
        case is_trial, trial_ends_at, cancelled_at, renews_into_product_id, grace_period_expires_at, offer
        case expiration_reason, billing_issue_detected_at, ownership, price_increase_status
    }

    /// `{"type": "introductory", "id": "…"}`: the offer the period in force was bought with.
    struct Offer: Encodable, Sendable {
        var type: String?
        var id: String?
    }

    public func encode(to encoder: any Encoder) throws {
        let e = entitlement.state
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(entitlement.id.uuidString.lowercased(), forKey: .id)
        try c.encode(e.productID, forKey: .product_id)
        try c.encode(e.productType.rawValue, forKey: .product_type)
        try c.encode(e.source.rawValue, forKey: .source)
        try c.encode(e.environment.rawValue, forKey: .environment)
        try c.encode(e.status.rawValue, forKey: .status)
        try c.encode(isActive, forKey: .is_active)
        try c.encode(rfc3339(e.expiresAt), forKey: .expires_at)
        try c.encode(rfc3339(e.purchasedAt), forKey: .purchased_at)
        // Only a subscription renews: a one-time purchase reads false, as clients expect a boolean.
        try c.encode(e.productType == .autoRenewable && e.willRenew == true, forKey: .will_renew)
        try c.encode(e.isTrial, forKey: .is_trial)
        try c.encode(rfc3339(e.trialEndsAt), forKey: .trial_ends_at)
        try c.encode(rfc3339(e.cancelledAt), forKey: .cancelled_at)
        try c.encode(e.pendingProductID, forKey: .renews_into_product_id)
        try c.encode(rfc3339(e.gracePeriodExpiresAt), forKey: .grace_period_expires_at)
        try c.encode(e.offer == nil && e.offerType == nil ? nil : Offer(type: e.offerType, id: e.offer), forKey: .offer)
        try c.encode(e.expirationReason?.rawValue, forKey: .expiration_reason)
        try c.encode(rfc3339(e.billingIssueDetectedAt), forKey: .billing_issue_detected_at)
        try c.encode((e.ownership ?? .purchased).rawValue, forKey: .ownership)
        try c.encode(e.priceIncreaseStatus?.rawValue, forKey: .price_increase_status)
    }
}

/// One transaction in the read API's shape.
public struct TransactionBody: Encodable, Sendable {
    public let transaction: StateReader.Transaction

    public init(_ transaction: StateReader.Transaction) {
        self.transaction = transaction
    }

    enum CodingKeys: String, CodingKey {
        case id, product_id, product_type, source, environment, status, amount, amount_refunded, currency, purchased_at
        case refunded_at, provider_transaction_id
    }

    public func encode(to encoder: any Encoder) throws {
        let t = transaction.state
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(transaction.id.uuidString.lowercased(), forKey: .id)
        try c.encode(t.productID, forKey: .product_id)
        try c.encode(t.productType?.rawValue, forKey: .product_type)
        try c.encode(t.source.rawValue, forKey: .source)
        try c.encode(t.environment.rawValue, forKey: .environment)
        try c.encode(t.status.rawValue, forKey: .status)
        try c.encode(t.amount, forKey: .amount)
        try c.encode(t.amountRefunded, forKey: .amount_refunded)
        try c.encode(t.currency, forKey: .currency)
        try c.encode(rfc3339(t.purchasedAt), forKey: .purchased_at)
        try c.encode(rfc3339(t.refundedAt), forKey: .refunded_at)
        try c.encode(t.providerTransactionID, forKey: .provider_transaction_id)
    }
}
