// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOFoundationCompat
import Shared

/// `POST /v1/iap/payment-intents` and `GET /v1/iap/transactions/{id}[?wait=SECONDS]`: the web
/// checkout (docs/checkout.md).
///
/// The POST body is `{user_id, product_id, [mode: "payment_sheet" | "hosted"], [trial: bool],
/// [trial_end], [success_url, cancel_url]}`; the answer `{transaction_id, status, kind,
/// client_secret | checkout_url, customer, expires_at, reused}`. The GET answers the status and
/// the entitlements the checkout gave; with `wait` it answers as soon as the status leaves
/// `pending`/`processing`, woken by the worker's commit (``UserChanges``).
struct CheckoutController<Context: RemoteAddressRequestContext>: Sendable {
    /// `nil` when `STRIPE_CHECKOUT_KEY` is not set: both routes answer `503 checkout_not_configured`.
    let maker: CheckoutMaker?
    let store: CheckoutStore
    let changes: UserChanges?
    let reader: StateReader
    let apiKeys: APIKeyCheck
    let allowsClientKeys: Bool
    var database = DatabaseCalls(limit: .seconds(5))
    var leeway: TimeInterval = 0
    var sandboxAccess: SandboxAccess = .anybody

    static var createPath: RouterPath { "/v1/iap/payment-intents" }
    static var statusPath: RouterPath { "/v1/iap/transactions/:id" }
    /// The longest `?wait=`.
    static var longestWait: Int { 30 }

    func addRoutes(to router: Router<Context>) {
        router.post(Self.createPath, use: create)
        router.get(Self.statusPath, use: status)
    }

    private struct Body: Decodable {
        var user_id: String
        var product_id: String
        var mode: String?
        var trial: Bool?
        var trial_end: String?
        var success_url: String?
        var cancel_url: String?
    }

    struct Answer: Encodable {
        var transaction_id: String
        var status: String
        var kind: String
        var product_id: String
        var client_secret: String?
        var checkout_url: String?
        var customer: String?
        var expires_at: String
        var reused: Bool?
        var entitlements: [EntitlementBody]?
    }

    /// A server key; a client key too with `CHECKOUT_CLIENT_KEYS=true`.
    private func authorize(_ request: Request, _ context: Context) throws -> APIKeyCheck.Role {
        guard allowsClientKeys else {
            try apiKeys.requireServer(request, from: context.remoteAddress)
            return .server
        }
        return try apiKeys.requireAny(request, from: context.remoteAddress)
    }

    @Sendable func create(_ request: Request, context: Context) async throws -> Response {
        let role = try authorize(request, context)
        guard let maker else { throw Self.notConfigured }
        let buffer = try await request.body.collect(upTo: 16_384)
        let body: Body
        do {
            body = try JSONDecoder().decode(Body.self, from: buffer)
        } catch {
            throw APIError(.badRequest, code: "malformed", message: "the body must be JSON {\"user_id\": …, \"product_id\": …}")
        }
        var ask = try Self.ask(body)
        if role == .client {
            if ask.trialEnd != nil {
                // A trial's end is the app's server's to choose (carried over from the App Store), not an app's.
                throw APIError(.forbidden, code: "forbidden", message: "trial_end takes a server key")
            }
            // An app names its user as the sync does, so naming a user proves nothing: an open
            // checkout (its client secret, its customer) goes back only to the same request repeated.
            switch IdempotencyKeyHeader.sent(in: request) {
            case .none: ask.requester = CheckoutStore.requester(idempotencyKey: nil)
            case .key(let key): ask.requester = CheckoutStore.requester(idempotencyKey: key)
            case .malformed:
                throw APIError(.badRequest, code: "malformed", message: "an Idempotency-Key is 1 to 255 characters, none of them control characters")
            }
        }
        do {
            let made = try await maker.make(ask)
            context.logger.info("checkout \(made.reused ? "reused" : "created")", metadata: [
                "transaction_id": "\(made.row.id)", "kind": "\(made.row.kind.rawValue)"])
            var response = try ReadController<Context>.json(answer(made.row, status: .pending, reused: made.reused))
            response.status = made.reused ? .ok : .created
            return response
        } catch let error as APIError {
            throw error
        } catch where DatabaseProblem.isUnavailability(error) {
            throw APIError.databaseUnavailable(error, limit: database.limit)
        }
    }

    /// The checked request: a user id ``UserIDRule`` takes, a mode, a trial end, and https
    /// return URLs for a hosted page.
    private static func ask(_ body: Body) throws -> CheckoutMaker.Ask {
        if let problem = UserIDRule.problem(with: body.user_id) { throw APIError(.badRequest, code: "malformed", message: problem) }
        guard !body.product_id.isEmpty, body.product_id.count <= 255 else {
            throw APIError(.badRequest, code: "malformed", message: "product_id must be 1 to 255 characters")
        }
        let hosted: Bool
        switch body.mode ?? "payment_sheet" {
        case "payment_sheet": hosted = false
        case "hosted": hosted = true
        default: throw APIError(.badRequest, code: "malformed", message: "mode must be payment_sheet or hosted")
        }
        var trialEnd: Date?
        if let text = body.trial_end {
            guard let date = ISO8601DateFormatter().date(from: text), date > Date().addingTimeInterval(60) else {
                throw APIError(.badRequest, code: "malformed", message: "trial_end must be an ISO 8601 time in the future")
            }
            trialEnd = date
        }
        if hosted {
            guard let success = body.success_url, Self.isWebURL(success) else {
                throw APIError(.badRequest, code: "malformed", message: "a hosted checkout needs success_url, an http(s) URL")
            }
            if let cancel = body.cancel_url, !Self.isWebURL(cancel) {
                throw APIError(.badRequest, code: "malformed", message: "cancel_url must be an http(s) URL")
            }
        }
        return CheckoutMaker.Ask(
            userID: body.user_id, productID: body.product_id, hosted: hosted, trial: body.trial, trialEnd: trialEnd,
            successURL: hosted ? body.success_url : nil, cancelURL: hosted ? body.cancel_url : nil)
    }

    private static func isWebURL(_ text: String) -> Bool {
        guard text.count <= 2_048, let url = URL(string: text), let scheme = url.scheme?.lowercased() else { return false }
        return (scheme == "https" || scheme == "http") && url.host != nil
    }

    @Sendable func status(_ request: Request, context: Context) async throws -> Response {
        let role = try authorize(request, context)
        guard let segment = context.parameters.get("id"), let id = UUID(uuidString: segment) else {
            throw APIError(.notFound, code: "not_found", message: "no transaction with this id")
        }
        let query = request.uri.queryParameters
        var wait = 0
        if let text = query["wait"] {
            guard let seconds = Int(text), (0...Self.longestWait).contains(seconds) else {
                throw APIError(.badRequest, code: "malformed", message: "wait must be 0 to \(Self.longestWait) seconds")
            }
            wait = seconds
        }
        // An app (client key) reads only its own user's checkout, as it names the user in the request.
        var owner: String?
        if role == .client {
            guard let user = query["user_id"].map(String.init) else {
                throw APIError(.badRequest, code: "malformed", message: "with a client key, user_id is required")
            }
            owner = user
        }
        let store = self.store
        let database = self.database
        let read: @Sendable () async throws -> CheckoutStore.Outcome? = { [owner] in
            try await database.run { try await store.outcome(of: id, userID: owner) }
        }
        guard var outcome = try await read() else { throw APIError(.notFound, code: "not_found", message: "no transaction with this id") }
        if wait > 0, outcome.status.isUnsettled, let changes {
            let settled = try await changes.wait(for: outcome.row.userID, timeout: .seconds(wait)) { () -> CheckoutStore.Outcome? in
                guard let now = try await read() else { return nil }
                return now.status.isUnsettled ? nil : now
            }
            if let settled { outcome = settled } else if let now = try await read() { outcome = now }
        }
        let reader = self.reader
        let keys = outcome.entitlementKeys
        let (entitlements, catalog) = keys.isEmpty
            ? ([], [])
            : try await database.run { (try await reader.entitlements(entityKeys: keys), try await reader.catalog()) }
        let grants = AccessLevels.grants(of: catalog)
        let now = Date()
        var answer = answer(outcome.row, status: outcome.status, reused: nil)
        answer.entitlements = entitlements.map {
            EntitlementBody($0, now: now, leeway: leeway, sandboxAccess: sandboxAccess, userID: outcome.row.userID, grants: grants)
        }
        return try ReadController<Context>.json(answer)
    }

    private func answer(_ row: CheckoutRow, status: CheckoutStatus, reused: Bool?) -> Answer {
        Answer(
            transaction_id: row.id.uuidString.lowercased(), status: status.rawValue, kind: row.kind.rawValue, product_id: row.productID,
            client_secret: row.objects.clientSecret, checkout_url: row.objects.checkoutURL, customer: row.customer,
            expires_at: ISO8601DateFormatter().string(from: row.expiresAt), reused: reused, entitlements: nil)
    }

    static var notConfigured: APIError {
        APIError(.serviceUnavailable, code: "checkout_not_configured", message: "web checkout is off: STRIPE_CHECKOUT_KEY is not set")
    }
}
