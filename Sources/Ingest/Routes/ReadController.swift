// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import NIOCore
import Shared

/// `GET /v1/iap/entitlements?user_id=|email=` and `GET /v1/iap/transaction-history?user_id=&limit=`.
struct ReadController<Context: RequestContext>: Sendable {
    let reader: StateReader
    let apiKeys: APIKeyCheck
    /// How long past `expires_at` an entitlement still reads active (`ENTITLEMENT_LEEWAY_SECONDS`).
    var leeway: TimeInterval = 0

    static var entitlementsPath: RouterPath { "/v1/iap/entitlements" }
    static var historyPath: RouterPath { "/v1/iap/transaction-history" }

    func addRoutes(to router: Router<Context>) {
        router.get(Self.entitlementsPath, use: entitlements)
        router.get(Self.historyPath, use: history)
    }

    @Sendable func entitlements(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.require(request)
        let query = request.uri.queryParameters
        let found: [StateReader.Entitlement]
        if let user = query["user_id"].map(String.init), !user.isEmpty {
            found = try await reader.entitlements(userID: user)
        } else if let email = query["email"].map(String.init), !email.isEmpty {
            found = try await reader.entitlements(email: email)
        } else {
            throw APIError(.badRequest, code: "missing_parameter", message: "give user_id or email")
        }
        let now = Date()
        return try Self.json(["entitlements": found.map { EntitlementBody($0, now: now, leeway: leeway) }])
    }

    @Sendable func history(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.require(request)
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
        let found = try await reader.transactions(userID: user, limit: limit)
        return try Self.json(["transactions": found.map(TransactionBody.init)])
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
        case id, product_id, product_type, source, status, is_active, expires_at, purchased_at, will_renew, is_trial
        case trial_ends_at, cancelled_at
    }

    func encode(to encoder: any Encoder) throws {
        let e = entitlement.state
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(entitlement.id.uuidString.lowercased(), forKey: .id)
        try c.encode(e.productID, forKey: .product_id)
        try c.encode(e.productType.rawValue, forKey: .product_type)
        try c.encode(e.source.rawValue, forKey: .source)
        try c.encode(e.status.rawValue, forKey: .status)
        try c.encode(isActive, forKey: .is_active)
        try c.encode(rfc3339(e.expiresAt), forKey: .expires_at)
        try c.encode(rfc3339(e.purchasedAt), forKey: .purchased_at)
        try c.encode(e.willRenew, forKey: .will_renew)
        try c.encode(e.isTrial, forKey: .is_trial)
        try c.encode(rfc3339(e.trialEndsAt), forKey: .trial_ends_at)
        try c.encode(rfc3339(e.cancelledAt), forKey: .cancelled_at)
    }
}

/// One transaction in the read API's shape.
struct TransactionBody: Encodable {
    let transaction: StateReader.Transaction

    init(_ transaction: StateReader.Transaction) {
        self.transaction = transaction
    }

    enum CodingKeys: String, CodingKey {
        case id, product_id, product_type, source, status, amount, amount_refunded, currency, purchased_at, refunded_at
        case provider_transaction_id
    }

    func encode(to encoder: any Encoder) throws {
        let t = transaction.state
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(transaction.id.uuidString.lowercased(), forKey: .id)
        try c.encode(t.productID, forKey: .product_id)
        try c.encode(t.productType?.rawValue, forKey: .product_type)
        try c.encode(t.source.rawValue, forKey: .source)
        try c.encode(t.status.rawValue, forKey: .status)
        try c.encode(t.amount, forKey: .amount)
        try c.encode(t.amountRefunded, forKey: .amount_refunded)
        try c.encode(t.currency, forKey: .currency)
        try c.encode(rfc3339(t.purchasedAt), forKey: .purchased_at)
        try c.encode(rfc3339(t.refundedAt), forKey: .refunded_at)
        try c.encode(t.providerTransactionID, forKey: .provider_transaction_id)
    }
}
