// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization
import NIOFoundationCompat
import TestSupport

/// A local Stripe API, built from Stripe's documented requests and answers: it checks the bearer
/// key, serves `GET /v1/events` (newest first, `created[gte]`, `limit`, `starting_after`,
/// `has_more`) and `GET /v1/subscriptions/{id}`, misbehaves when told (`429`, `500`) and records
/// what it was asked.
final class StripeAPIStandIn: Sendable {
    struct Request: Sendable {
        var path: String
        var query: String
        var stripeVersion: String?
        var account: String?
        var authorized: Bool
    }

    static let apiKey = "rk_test_standin_0123456789abcdef"

    private struct State {
        /// Event JSON objects, any order; served newest first.
        var events: [[String: any Sendable]] = []
        var subscriptions: [String: [String: any Sendable]] = [:]
        var requests: [Request] = []
        var misbehave: @Sendable (Int) -> Int? = { _ in nil }
    }

    private let state = Mutex(State())
    private let baseBox = Mutex("")
    var baseURL: String { baseBox.withLock { $0 } }
    var requests: [Request] { state.withLock { $0.requests } }

    func add(event: [String: any Sendable]) { state.withLock { $0.events.append(event) } }
    func setSubscription(_ object: [String: any Sendable]) { state.withLock { $0.subscriptions[object["id"] as? String ?? ""] = object } }
    /// Answers the `n`th request with this status instead of serving it.
    func misbehave(_ rule: @escaping @Sendable (Int) -> Int?) { state.withLock { $0.misbehave = rule } }

    func workerEnvironment() -> [String: String] {
        ["STRIPE_API_KEY": Self.apiKey, "STRIPE_API_VERSION": "2025-03-31.basil", "STRIPE_API_BASE_URL": baseURL]
    }

    static func with<Result: Sendable>(_ body: @Sendable @escaping (StripeAPIStandIn) async throws -> Result) async throws -> Result {
        let standIn = StripeAPIStandIn()
        let router = Router()
        router.get("/v1/events") { request, _ in standIn.events(request) }
        router.get("/v1/subscriptions/:id") { request, context in standIn.subscription(request, id: context.parameters.get("id") ?? "") }
        return try await LocalHTTPServer.run(router) { base in
            standIn.baseBox.withLock { $0 = base }
            return try await body(standIn)
        }
    }

    private func events(_ request: HummingbirdCore.Request) -> Response {
        if let refused = record(request) { return refused }
        let query = request.uri.queryParameters
        let since = query["created[gte]"].flatMap { Int($0) } ?? 0
        let limit = min(query["limit"].flatMap { Int($0) } ?? 10, 100)
        let after = query["starting_after"].map(String.init)
        let all = state.withLock { $0.events }
            .filter { ($0["created"] as? Int ?? 0) >= since }
            .sorted { ($0["created"] as? Int ?? 0, $0["id"] as? String ?? "") > ($1["created"] as? Int ?? 0, $1["id"] as? String ?? "") }
        let start = after.flatMap { id in all.firstIndex { $0["id"] as? String == id }.map { $0 + 1 } } ?? 0
        let page = Array(all.dropFirst(start).prefix(limit))
        return Self.json(.ok, ["object": "list", "url": "/v1/events", "data": page, "has_more": start + page.count < all.count])
    }

    private func subscription(_ request: HummingbirdCore.Request, id: String) -> Response {
        if let refused = record(request) { return refused }
        guard let object = state.withLock({ $0.subscriptions[id] }) else {
            return Self.json(.notFound, ["error": ["type": "invalid_request_error", "code": "resource_missing", "message": "No such subscription: '\(id)'"]])
        }
        return Self.json(.ok, object)
    }

    private func record(_ request: HummingbirdCore.Request) -> Response? {
        let authorized = request.headers[.authorization] == "Bearer \(Self.apiKey)"
        let (number, rule) = state.withLock { state in
            state.requests.append(Request(
                path: request.uri.path, query: request.uri.query ?? "", stripeVersion: request.headers[HTTPField.Name("Stripe-Version")!],
                account: request.headers[HTTPField.Name("Stripe-Account")!], authorized: authorized))
            return (state.requests.count, state.misbehave)
        }
        guard authorized else {
            return Self.json(.unauthorized, ["error": ["type": "invalid_request_error", "message": "Invalid API Key provided"]])
        }
        if let status = rule(number) {
            return Self.json(.init(code: status), ["error": ["type": "api_error", "message": "stand-in misbehaving"]])
        }
        return nil
    }

    static func json(_ status: HTTPResponse.Status, _ object: [String: Any]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: data)))
    }
}
