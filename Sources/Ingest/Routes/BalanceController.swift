// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOFoundationCompat
import Shared

/// In-app currency balances (docs/credits.md), all with a server key, all on the primary:
/// - `POST /v1/iap/users/{user_id}/balance-transactions` with an `Idempotency-Key` header and
///   `{"adjustments": {"credits": -20}, "reason": "…", "metadata": {…}}`: a spend or deposit,
///   atomic across currencies. `200` with the ledger row; the same key and body again answer the
///   same row with `Idempotent-Replayed: true`; the key with another body is
///   `400 idempotency_key_reused`; a balance too low is `409 insufficient_balance` and nothing
///   changes (not kept under the key: a retry after a deposit may succeed).
/// - `GET /v1/iap/users/{user_id}/balances`: `{"user_id", "balances": {"credits": 480}}`.
/// - `GET /v1/iap/users/{user_id}/balance-transactions[?limit=][&starting_after=]`: the ledger,
///   newest first, paged as the transaction history is.
struct BalanceController<Context: RemoteAddressRequestContext>: Sendable {
    let store: BalanceStore
    let apiKeys: APIKeyCheck
    var database = DatabaseCalls(limit: .seconds(5))

    static var transactionsPath: RouterPath { "/v1/iap/users/:user_id/balance-transactions" }
    static var balancesPath: RouterPath { "/v1/iap/users/:user_id/balances" }
    static var replayed: HTTPField.Name { HTTPField.Name("Idempotent-Replayed")! }

    func addRoutes(to router: Router<Context>) {
        router.post(Self.transactionsPath, use: adjust)
        router.get(Self.transactionsPath, use: history)
        router.get(Self.balancesPath, use: balances)
    }

    @Sendable func adjust(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireServer(request, from: context.remoteAddress)
        let user = try UserPathSegment.user(context.parameters)
        guard case .key(let key) = IdempotencyKeyHeader.sent(in: request) else {
            throw APIError(
                .badRequest, code: "missing_idempotency_key",
                message: "send an Idempotency-Key header (1 to 255 characters) with every balance transaction, so that a retry is not a second spend")
        }
        guard !CurrencyGrantDecision.isReserved(key) else {
            throw APIError(
                .badRequest, code: "reserved_idempotency_key",
                message: "an Idempotency-Key may not start with \(CurrencyGrantDecision.reservedKeyPrefixes.joined(separator: ", ")): Sluice keys its own grants so")
        }
        let buffer = try await request.body.collect(upTo: 16_384)
        let body: BalanceRequest
        do {
            body = try JSONDecoder().decode(BalanceRequest.self, from: buffer)
        } catch let problem as BalanceAdjustments.Problem {
            throw APIError(.badRequest, code: "invalid_adjustments", message: problem.description)
        } catch {
            throw APIError(
                .badRequest, code: "malformed",
                message: "the body must be JSON {\"adjustments\": {\"credits\": -20}, \"reason\": \"…\", \"metadata\": {\"key\": \"value\"}}")
        }
        let store = self.store
        let outcome = try await database.run {
            try await store.adjust(
                user: user, body.adjustments, cause: .api, key: key, digest: body.digest, reason: body.reason, metadata: body.metadata)
        }
        switch outcome {
        case .applied(let row):
            context.logger.info("balance changed", metadata: ["user_id": "\(user)", "balance_transaction": "\(row.id)"])
            return try ReadController<Context>.json(row)
        case .replayed(let row):
            var response = try ReadController<Context>.json(row)
            response.headers[Self.replayed] = "true"
            return response
        case .keyReused:
            throw APIError(
                .badRequest, code: "idempotency_key_reused",
                message: "this Idempotency-Key was used for another request for this user; use a new key for a new request")
        case .insufficient(let balances):
            let short = balances.sorted { $0.key < $1.key }.map { "\($0.key) (balance \($0.value))" }.joined(separator: ", ")
            throw APIError(.conflict, code: "insufficient_balance", message: "not enough \(short): nothing was changed")
        }
    }

    private struct BalancesAnswer: Encodable {
        var user_id: String
        var balances: [String: Int64]
    }

    @Sendable func balances(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireServer(request, from: context.remoteAddress)
        let user = try UserPathSegment.user(context.parameters)
        let store = self.store
        let balances = try await database.run { try await store.balances(user: user) }
        return try ReadController<Context>.json(BalancesAnswer(user_id: user, balances: balances))
    }

    @Sendable func history(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireServer(request, from: context.remoteAddress)
        let user = try UserPathSegment.user(context.parameters)
        let page = try HistoryPage(request.uri.queryParameters, cursorNames: "a balance transaction")
        let store = self.store
        let rows = try await database.run { () async throws -> [BalanceTransaction]? in
            if let cursor = page.startingAfter, !(try await store.isLedgerRow(cursor, user: user)) { return nil }
            return try await store.history(user: user, limit: page.limit, startingAfter: page.startingAfter)
        }
        guard let rows else {
            throw APIError(.badRequest, code: "invalid_cursor", message: "starting_after must be the id of one of this user's balance transactions")
        }
        return try ReadController<Context>.json(["balance_transactions": rows])
    }
}
