// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import NIOCore
import Shared
import NIOFoundationCompat

/// `GET /v1/iap/entitlements?user_id=|email=[&environment=]` and
/// `GET /v1/iap/transaction-history?user_id=[&limit=][&starting_after=][&environment=]`.
struct ReadController<Context: RequestContext>: Sendable {
    let reader: StateReader
    let apiKeys: APIKeyCheck
    /// How long past `expires_at` an entitlement still reads active (`ENTITLEMENT_LEEWAY_SECONDS`).
    var leeway: TimeInterval = 0
    /// The environment a request that names none reads (`READ_API_ENVIRONMENT`).
    var defaultEnvironment: EnvironmentFilter = .all

    static var entitlementsPath: RouterPath { "/v1/iap/entitlements" }
    static var historyPath: RouterPath { "/v1/iap/transaction-history" }

    func addRoutes(to router: Router<Context>) {
        router.get(Self.entitlementsPath, use: entitlements)
        router.get(Self.historyPath, use: history)
    }

    @Sendable func entitlements(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireServer(request)
        let query = request.uri.queryParameters
        let environment = try environment(query)
        let found: [StateReader.Entitlement]
        if let user = query["user_id"].map(String.init), !user.isEmpty {
            found = try await reader.entitlements(userID: user, environment: environment.only)
        } else if let email = query["email"].map(String.init), !email.isEmpty {
            found = try await reader.entitlements(email: email, environment: environment.only)
        } else {
            throw APIError(.badRequest, code: "missing_parameter", message: "give user_id or email")
        }
        let now = Date()
        return try Self.json(["entitlements": found.map { EntitlementBody($0, now: now, leeway: leeway) }])
    }

    @Sendable func history(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireServer(request)
        let query = request.uri.queryParameters
        guard let user = query["user_id"].map(String.init), !user.isEmpty else {
            throw APIError(.badRequest, code: "missing_parameter", message: "give user_id")
        }
        var limit = 50
        if let text = query["limit"] {
            guard let value = Int(text), (1...100).contains(value) else {
                throw APIError(.badRequest, code: "invalid_limit", message: "limit must be a whole number from 1 to 100")
            }
            limit = value
        }
        var startingAfter: UUID?
        if let text = query["starting_after"] {
            guard let id = UUID(uuidString: String(text)) else {
                throw APIError(.badRequest, code: "invalid_cursor", message: "starting_after must be the id of a transaction")
            }
            startingAfter = id
        }
        let found = try await reader.transactions(
            userID: user, environment: try environment(query).only, limit: limit, startingAfter: startingAfter)
        return try Self.json(["transactions": found.map(TransactionBody.init)])
    }

    /// The request's `environment`, or the deployment's default.
    private func environment(_ query: Parameters) throws -> EnvironmentFilter {
        guard let text = query["environment"] else { return defaultEnvironment }
        guard let filter = EnvironmentFilter(rawValue: String(text)) else {
            throw APIError(.badRequest, code: "invalid_environment", message: "environment must be one of \(EnvironmentFilter.accepted)")
        }
        return filter
    }

    static func json(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(data: try encoder.encode(value))))
    }
}

/// RFC 3339 UTC, as the read API writes times.
private func rfc3339(_ date: Date?) -> String? {
    date.map { $0.formatted(.iso8601) }
}

/// One entitlement in the read API's shape; unknown values are `null`, never left out.
struct EntitlementBody: Encodable {
    let entitlement: StateReader.Entitlement
    let isActive: Bool

    init(_ entitlement: StateReader.Entitlement, now: Date, leeway: TimeInterval) {
        self.entitlement = entitlement
        self.isActive = entitlement.state.isActive(at: now, leeway: leeway)
    }

    enum CodingKeys: String, CodingKey {
        case id, product_id, product_type, source, environment, status, is_active, expires_at, purchased_at, will_renew
        case is_trial, trial_ends_at, cancelled_at, renews_into_product_id, grace_period_expires_at, offer
        case expiration_reason, billing_issue_detected_at, ownership, price_increase_status
    }

    /// `{"type": "introductory", "id": "…"}`: the offer the period in force was bought with.
    struct Offer: Encodable {
        var type: String?
        var id: String?
    }

    func encode(to encoder: any Encoder) throws {
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
struct TransactionBody: Encodable {
    let transaction: StateReader.Transaction

    init(_ transaction: StateReader.Transaction) {
        self.transaction = transaction
    }

    enum CodingKeys: String, CodingKey {
        case id, product_id, product_type, source, environment, status, amount, amount_refunded, currency, purchased_at
        case refunded_at, provider_transaction_id
    }

    func encode(to encoder: any Encoder) throws {
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
