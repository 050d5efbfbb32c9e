// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOFoundationCompat
import Shared

/// `PUT /v1/iap/users/{user_id}/app-account-token` (server key): the app's server says which of
/// its users an `appAccountToken` is, so that one person buying on both stores is one user.
///
/// Body `{"app_account_token":"<UUID>"}`. `201` when registered (what Apple state was stored under
/// the token moves to the user, announced as `entitlement.transferred`), `200` when it already
/// was this user's, `409 token_conflict` when it is another user's, `503 registration_blocked` when
/// a queue row Sluice did not write holds the registration's key. A user may have several tokens.
struct AppAccountTokenController<Context: RemoteAddressRequestContext>: Sendable {
    let tokens: AppAccountTokens
    let apiKeys: APIKeyCheck
    /// The registration's write bounded by `DATABASE_TIMEOUT_SECONDS`.
    var database = DatabaseCalls(limit: .seconds(5))

    static var path: RouterPath { "/v1/iap/users/:user_id/app-account-token" }

    func addRoutes(to router: Router<Context>) {
        router.put(Self.path, use: register)
    }

    private struct Body: Decodable {
        var app_account_token: String
    }

    private struct Answer: Encodable {
        var user_id: String
        var app_account_token: String
    }

    @Sendable func register(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireServer(request, from: context.remoteAddress)
        let user = try UserPathSegment.user(context.parameters)
        let buffer = try await request.body.collect(upTo: 4_096)
        guard let body = try? JSONDecoder().decode(Body.self, from: buffer), let token = UUID(uuidString: body.app_account_token) else {
            throw APIError(.badRequest, code: "malformed", message: "the body must be JSON {\"app_account_token\": \"<UUID>\"}")
        }
        let tokens = self.tokens
        let result: AppAccountTokens.Registration
        do {
            result = try await database.run { try await tokens.register(token, userID: user) }
        } catch let blocked as AppAccountTokens.RegistrationBlocked {
            context.logger.error("appAccountToken registration refused: \(blocked)")
            throw APIError(.serviceUnavailable, code: "registration_blocked", message: "this registration cannot be stored now; the operator has been told")
        }
        if result == .conflict {
            context.logger.info("appAccountToken registration refused: the token is another user's")
            throw APIError(.conflict, code: "token_conflict", message: "this app_account_token is registered to another user")
        }
        if result == .registered { context.logger.info("appAccountToken registered", metadata: ["user_id": "\(user)"]) }
        var response = try ReadController<Context>.json(Answer(user_id: user, app_account_token: token.uuidString.lowercased()))
        response.status = result == .registered ? .created : .ok
        return response
    }
}
