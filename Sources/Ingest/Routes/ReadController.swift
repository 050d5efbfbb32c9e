// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import NIOCore
import Shared
import NIOFoundationCompat

/// `GET /v1/iap/entitlements?user_id=|email=[&environment=]`,
/// `GET /v1/iap/transaction-history?user_id=[&limit=][&starting_after=][&environment=]` and
/// `GET /v1/iap/access?user_id=[&environment=]`.
struct ReadController<Context: RemoteAddressRequestContext>: Sendable {
    /// The primary, or a streaming replica while its lag allows (`READ_DATABASE_URL`).
    let source: ReadSource
    let apiKeys: APIKeyCheck
    /// Each read bounded by `DATABASE_TIMEOUT_SECONDS`: `503` past it.
    var database = DatabaseCalls(limit: .seconds(5))
    /// How long past `expires_at` an entitlement still reads active (`ENTITLEMENT_LEEWAY_SECONDS`).
    var leeway: TimeInterval = 0
    /// The environment a request that names none reads (`READ_API_ENVIRONMENT`).
    var defaultEnvironment: EnvironmentFilter = .all
    /// Whether sandbox entitlements give access (`SANDBOX_ACCESS`); one that does not is left out
    /// of an answer that names no `environment`.
    var sandboxAccess: SandboxAccess = .anybody

    static var entitlementsPath: RouterPath { "/v1/iap/entitlements" }
    static var historyPath: RouterPath { "/v1/iap/transaction-history" }
    static var accessPath: RouterPath { "/v1/iap/access" }

    func addRoutes(to router: Router<Context>) {
        router.get(Self.entitlementsPath, use: entitlements)
        router.get(Self.historyPath, use: history)
        router.get(Self.accessPath, use: access)
    }

    /// One access level in the answer of ``access(_:context:)``.
    private struct AccessBody: Encodable {
        var access_level: String
        var is_active: Bool
        var expires_at: String?
        var entitlements: [String]

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(access_level, forKey: .access_level)
            try container.encode(is_active, forKey: .is_active)
            // null, not left out: a lifetime purchase's level has no end.
            try container.encode(expires_at, forKey: .expires_at)
            try container.encode(entitlements, forKey: .entitlements)
        }

        enum CodingKeys: String, CodingKey { case access_level, is_active, expires_at, entitlements }
    }

    /// "Is this user `pro`?": each access level the user's entitlements give, on either store,
    /// through the catalog (``AccessLevels``), as the entitlements read says them (same
    /// environment filter, same sandbox rule).
    @Sendable func access(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireServer(request, from: context.remoteAddress)
        let query = request.uri.queryParameters
        let environment = try environment(query)
        guard let user = try Self.userID(query["user_id"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }) else {
            throw APIError(.badRequest, code: "missing_parameter", message: "give user_id")
        }
        let source = self.source
        let (found, catalog) = try await database.run {
            (try await source.reader.entitlements(userID: user, environment: environment.only), try await source.reader.catalog())
        }
        let now = Date()
        let namesEnvironment = query["environment"] != nil
        let holdings = found.compactMap { entitlement -> AccessLevels.Holding? in
            guard namesEnvironment || sandboxAccess.grants(entitlement.state.environment, to: user) else { return nil }
            let body = EntitlementBody(entitlement, now: now, leeway: leeway, sandboxAccess: sandboxAccess, userID: user)
            return AccessLevels.Holding(
                id: entitlement.id, productID: entitlement.state.productID, isActive: body.isActive, expiresAt: entitlement.state.expiresAt)
        }
        let levels = AccessLevels.levels(of: holdings, grants: AccessLevels.grants(of: catalog))
        let bodies = levels.map {
            AccessBody(
                access_level: $0.name, is_active: $0.isActive, expires_at: $0.expiresAt.map { $0.formatted(.iso8601) },
                entitlements: $0.entitlementIDs.map { $0.uuidString.lowercased() })
        }
        return try Self.json(["access": bodies])
    }

    @Sendable func entitlements(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireServer(request, from: context.remoteAddress)
        let query = request.uri.queryParameters
        let environment = try environment(query)
        let found: [StateReader.Entitlement]
        let user = try Self.userID(query["user_id"].map(String.init).flatMap { $0.isEmpty ? nil : $0 })
        let source = self.source
        let grants = AccessLevels.grants(of: try await database.run { try await source.reader.catalog() })
        if let user {
            found = try await database.run { try await source.reader.entitlements(userID: user, environment: environment.only) }
        } else if let email = query["email"].map(String.init), !email.isEmpty {
            guard !UserIDRule.containsControlCharacters(email) else {
                throw APIError(.badRequest, code: "malformed", message: "email must not contain control characters")
            }
            found = try await database.run { try await source.reader.entitlements(email: email, environment: environment.only) }
        } else {
            throw APIError(.badRequest, code: "missing_parameter", message: "give user_id or email")
        }
        let now = Date()
        let bodies = found.map { EntitlementBody($0, now: now, leeway: leeway, sandboxAccess: sandboxAccess, userID: user, grants: grants) }
        let namesEnvironment = query["environment"] != nil
        return try Self.json([
            "entitlements": bodies.filter { namesEnvironment || sandboxAccess.grants($0.entitlement.state.environment, to: user ?? $0.entitlement.state.userID) }
        ])
    }

    /// `user_id` as given (percent-decoded by the query's parsing), held to ``UserIDRule``.
    static func userID(_ given: String?) throws -> String? {
        guard let given else { return nil }
        if let problem = UserIDRule.problem(with: given) { throw APIError(.badRequest, code: "malformed", message: problem) }
        return given
    }

    @Sendable func history(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireServer(request, from: context.remoteAddress)
        let query = request.uri.queryParameters
        guard let user = try Self.userID(query["user_id"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }) else {
            throw APIError(.badRequest, code: "missing_parameter", message: "give user_id")
        }
        let history = try HistoryPage(query, cursorNames: "a transaction")
        let (source, only, page, cursor) = (self.source, try environment(query).only, history.limit, history.startingAfter)
        let found = try await database.run {
            try await source.reader.transactions(userID: user, environment: only, limit: page, startingAfter: cursor)
        }
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
