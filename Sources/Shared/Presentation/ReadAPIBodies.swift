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
    /// What the catalog says its product grants (``AccessLevels/of(_:in:)``); empty without one.
    public let accessLevels: [String]

    /// - Parameters:
    ///   - now: the time `is_active` is computed for.
    ///   - leeway: `ENTITLEMENT_LEEWAY_SECONDS`.
    ///   - sandboxAccess: whether a sandbox entitlement counts (`SANDBOX_ACCESS`).
    ///   - userID: who holds it, for the sandbox rule: the user asked about, or the state's own.
    ///   - grants: the catalog's access levels by product id (``AccessLevels/grants(of:)``).
    public init(
        _ entitlement: StateReader.Entitlement, now: Date, leeway: TimeInterval, sandboxAccess: SandboxAccess, userID: String?,
        grants: [String: Set<String>] = [:]
    ) {
        self.entitlement = entitlement
        self.accessLevels = AccessLevels.of(entitlement.state.productID, in: grants)
        self.isActive = entitlement.state.isActive(at: now, leeway: leeway)
            && sandboxAccess.grants(entitlement.state.environment, to: userID ?? entitlement.state.userID)
    }

    /// The members, in the read API's order (docs/CONTRACT.md): what `encode(to:)` writes, and
    /// what an outgoing event's body holds (sorted there).
    public var members: [JSONTextMember] {
        let e = entitlement.state
        // `{"type": "introductory", "id": "…"}`: the offer the period in force was bought with; a
        // part not known is left out.
        let offer = [e.offerType.map { JSONTextMember("type", $0) }, e.offer.map { JSONTextMember("id", $0) }].compactMap { $0 }
        return [
            JSONTextMember("id", entitlement.id.uuidString.lowercased()),
            JSONTextMember("product_id", e.productID),
            JSONTextMember("product_type", e.productType.rawValue),
            JSONTextMember("access_levels", .strings(accessLevels)),
            JSONTextMember("source", e.source.rawValue),
            JSONTextMember("environment", e.environment.rawValue),
            JSONTextMember("status", e.status.rawValue),
            JSONTextMember("is_active", isActive),
            JSONTextMember("expires_at", rfc3339(e.expiresAt)),
            JSONTextMember("purchased_at", rfc3339(e.purchasedAt)),
            // Only a subscription renews: a one-time purchase reads false, as clients expect a boolean.
            JSONTextMember("will_renew", e.productType == .autoRenewable && e.willRenew == true),
            JSONTextMember("is_trial", e.isTrial),
            JSONTextMember("trial_ends_at", rfc3339(e.trialEndsAt)),
            JSONTextMember("cancelled_at", rfc3339(e.cancelledAt)),
            JSONTextMember("renews_into_product_id", e.pendingProductID),
            JSONTextMember("grace_period_expires_at", rfc3339(e.gracePeriodExpiresAt)),
            JSONTextMember("offer", offer.isEmpty ? .null : .object(offer)),
            JSONTextMember("expiration_reason", e.expirationReason?.rawValue),
            JSONTextMember("billing_issue_detected_at", rfc3339(e.billingIssueDetectedAt)),
            JSONTextMember("ownership", (e.ownership ?? .purchased).rawValue),
            JSONTextMember("price_increase_status", e.priceIncreaseStatus?.rawValue),
        ]
    }

    public func encode(to encoder: any Encoder) throws {
        try JSONTextMember.encode(members, to: encoder)
    }
}

/// One transaction in the read API's shape.
public struct TransactionBody: Encodable, Sendable {
    /// The ledger row's id; `nil` for a transaction shown without being stored (what a receipt
    /// holds, answered by `POST /v1/iap/receipts/verify`).
    public let id: UUID?
    public let state: TransactionState

    public init(_ transaction: StateReader.Transaction) {
        self.id = transaction.id
        self.state = transaction.state
    }

    /// A transaction that is not in the ledger: its `id` is `null`.
    public init(unstored state: TransactionState) {
        self.id = nil
        self.state = state
    }

    /// The members, in the read API's order: what `encode(to:)` writes, and what an outgoing
    /// event's body holds (sorted there).
    public var members: [JSONTextMember] {
        let t = state
        return [
            JSONTextMember("id", id?.uuidString.lowercased()),
            JSONTextMember("product_id", t.productID),
            JSONTextMember("product_type", t.productType?.rawValue),
            JSONTextMember("source", t.source.rawValue),
            JSONTextMember("environment", t.environment.rawValue),
            JSONTextMember("status", t.status.rawValue),
            JSONTextMember("amount", t.amount),
            JSONTextMember("amount_refunded", t.amountRefunded),
            JSONTextMember("currency", t.currency),
            JSONTextMember("quantity", t.quantity.map(Int64.init)),
            JSONTextMember("quantity_refunded", t.quantityRefunded.map(Int64.init)),
            JSONTextMember("is_trial", t.isTrial),
            JSONTextMember("purchased_at", rfc3339(t.purchasedAt)),
            JSONTextMember("refunded_at", rfc3339(t.refundedAt)),
            JSONTextMember("provider_transaction_id", t.providerTransactionID),
        ]
    }

    public func encode(to encoder: any Encoder) throws {
        try JSONTextMember.encode(members, to: encoder)
    }
}
