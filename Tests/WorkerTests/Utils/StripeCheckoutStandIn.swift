// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import Shared
import Synchronization
import TestSupport

/// A local Stripe API for web checkout, built from Stripe's documented requests and answers:
/// form-encoded bodies, `expand[]`, the bearer key, and the `Idempotency-Key` rules (the same key
/// and parameters replay the first answer with `Idempotent-Replayed: true`; other parameters are
/// `400 idempotency_error`; a key still in flight is `409`). It serves customers, prices,
/// PaymentIntents (and their cancel), subscriptions (`default_incomplete`: `incomplete`, or
/// `trialing` with a `pending_setup_intent`, or `active` at once when the first invoice is 0 —
/// paid without a PaymentIntent, so without a confirmation secret; `DELETE` cancels) and
/// Checkout Sessions (and their expire), counts what it made, and can be slowed down or hung.
/// A price added without an amount is a tiered one (`unit_amount` null).
final class StripeCheckoutStandIn: Sendable {
    static let apiKey = "rk_test_checkout_standin_0123456789"

    struct Made: Sendable {
        var customers = 0
        var paymentIntents = 0
        var subscriptions = 0
        var sessions = 0
    }

    private struct State {
        var prices: [String: [String: any Sendable]] = [:]
        var objects: [String: [String: any Sendable]] = [:]
        var made = Made()
        var next = 0
        /// Key → (parameters, answer), or `nil` parameters while in flight.
        var idempotency: [String: (parameters: String, answer: (status: Int, body: Data)?)] = [:]
        var delay: Duration?
        var bodies: [String] = []
    }

    private let state = Mutex(State())
    private let baseBox = Mutex("")
    var baseURL: String { baseBox.withLock { $0 } }
    var made: Made { state.withLock { $0.made } }
    /// Every create request's form body, in order.
    var bodies: [String] { state.withLock { $0.bodies } }

    /// Answers each create only after `delay` (`nil`: at once); the object is made before the wait.
    func setDelay(_ delay: Duration?) { state.withLock { $0.delay = delay } }

    func addPrice(_ id: String, amount: Int?, currency: String = "eur", interval: String? = nil, lookupKey: String? = nil) {
        var price: [String: any Sendable] = ["id": id, "object": "price", "unit_amount": amount, "currency": currency, "active": true,
                                             "type": interval == nil ? "one_time" : "recurring", "billing_scheme": amount == nil ? "tiered" : "per_unit"]
        if let interval { price["recurring"] = ["interval": interval, "interval_count": 1] as [String: any Sendable] }
        if let lookupKey { price["lookup_key"] = lookupKey }
        state.withLock { $0.prices[id] = price }
    }

    func object(_ id: String) -> [String: any Sendable]? { state.withLock { $0.objects[id] } }

    func environment() -> [String: String] {
        ["STRIPE_CHECKOUT_KEY": Self.apiKey, "STRIPE_API_BASE_URL": baseURL]
    }

    static func with<Result: Sendable>(_ body: @Sendable @escaping (StripeCheckoutStandIn) async throws -> Result) async throws -> Result {
        let standIn = StripeCheckoutStandIn()
        let router = Router()
        router.get("/v1/prices/:id") { request, context in await standIn.serve(request, nil) { _ in standIn.price(context.parameters.get("id") ?? "") } }
        router.get("/v1/prices") { request, _ in
            await standIn.serve(request, nil) { _ in
                let key = request.uri.queryParameters["lookup_keys[]"].map(String.init)
                let found = standIn.state.withLock { $0.prices.values.filter { $0["lookup_key"] as? String == key } }
                return (200, ["object": "list", "data": found, "has_more": false])
            }
        }
        router.post("/v1/customers") { request, _ in
            await standIn.serve(request, try await Self.form(request)) { form in standIn.make("cus", form) { $0.customers += 1 } }
        }
        router.post("/v1/payment_intents") { request, _ in
            await standIn.serve(request, try await Self.form(request)) { form in standIn.paymentIntent(form) }
        }
        router.post("/v1/payment_intents/:id/cancel") { request, context in
            await standIn.serve(request, try await Self.form(request)) { _ in standIn.cancel(context.parameters.get("id") ?? "", to: "canceled", from: ["requires_payment_method", "requires_confirmation", "requires_action"]) }
        }
        router.post("/v1/subscriptions") { request, _ in
            await standIn.serve(request, try await Self.form(request)) { form in standIn.subscription(form) }
        }
        router.get("/v1/subscriptions/:id") { request, context in
            await standIn.serve(request, nil) { _ in
                let id = context.parameters.get("id") ?? ""
                guard var object = standIn.object(id) else { return Self.error(404, "invalid_request_error", "resource_missing", "No such subscription: '\(id)'") }
                // Unexpanded, as Stripe answers without expand[].
                if let setup = object["pending_setup_intent"] as? [String: any Sendable] { object["pending_setup_intent"] = setup["id"] }
                if let invoice = object["latest_invoice"] as? [String: any Sendable] { object["latest_invoice"] = invoice["id"] }
                return (200, object)
            }
        }
        router.delete("/v1/subscriptions/:id") { request, context in
            await standIn.serve(request, nil) { _ in
                let id = context.parameters.get("id") ?? ""
                let answer = standIn.cancel(id, to: "canceled", from: ["incomplete", "trialing", "active", "past_due"])
                // `prorate=true`: the unused time is credited (recorded for the tests).
                if answer.0 == 200, request.uri.queryParameters["prorate"] == "true" { standIn.state.withLock { $0.objects[id]?["prorated"] = true } }
                return answer
            }
        }
        router.post("/v1/checkout/sessions") { request, _ in
            await standIn.serve(request, try await Self.form(request)) { form in standIn.session(form) }
        }
        router.post("/v1/checkout/sessions/:id/expire") { request, context in
            await standIn.serve(request, try await Self.form(request)) { _ in standIn.cancel(context.parameters.get("id") ?? "", to: "expired", from: ["open"]) }
        }
        return try await LocalHTTPServer.run(router) { base in
            standIn.baseBox.withLock { $0 = base }
            return try await body(standIn)
        }
    }

    // MARK: Objects

    private func price(_ id: String) -> (Int, [String: any Sendable]) {
        guard let price = state.withLock({ $0.prices[id] }) else { return Self.error(404, "invalid_request_error", "resource_missing", "No such price: '\(id)'") }
        return (200, price)
    }

    private func make(_ prefix: String, _ form: [(key: String, value: String)], count: (inout Made) -> Void) -> (Int, [String: any Sendable]) {
        let id = newID(prefix, count)
        let object: [String: any Sendable] = ["id": id, "object": "customer", "metadata": Self.metadata(form)]
        state.withLock { $0.objects[id] = object }
        return (200, object)
    }

    /// A new object id (`prefix_standinN`), counted in ``made``.
    private func newID(_ prefix: String, _ count: (inout Made) -> Void) -> String {
        state.withLock { state in
            state.next += 1
            count(&state.made)
            return "\(prefix)_standin\(state.next)"
        }
    }

    private func paymentIntent(_ form: [(key: String, value: String)]) -> (Int, [String: any Sendable]) {
        guard let amount = Self.value("amount", form).flatMap(Int.init), let currency = Self.value("currency", form) else {
            return Self.error(400, "invalid_request_error", "parameter_missing", "Missing required param: amount.")
        }
        let id = newID("pi") { $0.paymentIntents += 1 }
        let object: [String: any Sendable] = [
            "id": id, "object": "payment_intent", "amount": amount, "currency": currency, "customer": Self.value("customer", form) ?? "",
            "status": "requires_payment_method", "client_secret": "\(id)_secret_\(id.count)", "metadata": Self.metadata(form), "livemode": false,
        ]
        state.withLock { $0.objects[id] = object }
        return (200, object)
    }

    private func subscription(_ form: [(key: String, value: String)]) -> (Int, [String: any Sendable]) {
        guard Self.value("payment_behavior", form) == "default_incomplete", let priceID = Self.value("items[0][price]", form),
              let price = state.withLock({ $0.prices[priceID] }) else {
            return Self.error(400, "invalid_request_error", "parameter_invalid", "This stand-in makes default_incomplete subscriptions of a known price.")
        }
        let trial = Self.value("trial_period_days", form) != nil || Self.value("trial_end", form) != nil
        let expand = Set(form.filter { $0.key == "expand[]" }.map(\.value))
        let (id, invoiceID, setupID) = state.withLock { state -> (String, String, String) in
            state.next += 1
            state.made.subscriptions += 1
            return ("sub_standin\(state.next)", "in_standin\(state.next)", "seti_standin\(state.next)")
        }
        let amountDue = trial ? 0 : price["unit_amount"] as? Int ?? 0
        // Stripe pays an invoice of 0 at finalization: no PaymentIntent, the subscription `active`.
        let paidAtOnce = amountDue == 0 && !trial
        var invoice: [String: any Sendable] = [
            "id": invoiceID, "object": "invoice", "amount_due": amountDue, "status": paidAtOnce ? "paid" : "open",
            "confirmation_secret": nil as [String: any Sendable]?,
        ]
        if expand.contains("latest_invoice.confirmation_secret"), !trial, !paidAtOnce {
            invoice["confirmation_secret"] = ["client_secret": "pi_for_\(invoiceID)_secret_x", "type": "payment_intent"] as [String: any Sendable]
        }
        let now = Int(Date().timeIntervalSince1970)
        let periodEnd = now + (Self.value("trial_period_days", form).flatMap(Int.init).map { $0 * 86_400 } ?? 30 * 86_400)
        var object: [String: any Sendable] = [
            "id": id, "object": "subscription", "status": trial ? "trialing" : paidAtOnce ? "active" : "incomplete",
            "customer": Self.value("customer", form) ?? "",
            "created": now, "current_period_start": now, "current_period_end": periodEnd, "cancel_at_period_end": false, "livemode": false,
            "trial_end": trial ? periodEnd : nil as Int?,
            "items": ["object": "list", "data": [["id": "si_\(id)", "price": price, "current_period_end": periodEnd] as [String: any Sendable]]] as [String: any Sendable],
            "metadata": Self.metadata(form), "latest_invoice": expand.contains(where: { $0.hasPrefix("latest_invoice") }) ? invoice : invoiceID,
        ]
        if trial {
            let setup: [String: any Sendable] = ["id": setupID, "object": "setup_intent", "client_secret": "\(setupID)_secret_y", "status": "requires_payment_method"]
            object["pending_setup_intent"] = expand.contains("pending_setup_intent") ? setup : setupID
        }
        state.withLock { $0.objects[id] = object }
        return (200, object)
    }

    private func session(_ form: [(key: String, value: String)]) -> (Int, [String: any Sendable]) {
        guard Self.value("success_url", form) != nil, let expires = Self.value("expires_at", form).flatMap(Int.init),
              TimeInterval(expires) - Date().timeIntervalSince1970 >= 1_740, TimeInterval(expires) - Date().timeIntervalSince1970 <= 86_400 else {
            return Self.error(400, "invalid_request_error", "parameter_invalid", "success_url is required and expires_at must be 30 minutes to 24 hours ahead.")
        }
        let id = newID("cs_test") { $0.sessions += 1 }
        let object: [String: any Sendable] = [
            "id": id, "object": "checkout.session", "status": "open", "mode": Self.value("mode", form) ?? "", "url": "https://checkout.stripe.com/c/pay/\(id)",
            "client_reference_id": Self.value("client_reference_id", form) ?? "", "metadata": Self.metadata(form), "expires_at": expires,
        ]
        state.withLock { $0.objects[id] = object }
        return (200, object)
    }

    private func cancel(_ id: String, to status: String, from allowed: Set<String>) -> (Int, [String: any Sendable]) {
        guard var object = state.withLock({ $0.objects[id] }) else { return Self.error(404, "invalid_request_error", "resource_missing", "No such object: '\(id)'") }
        guard allowed.contains(object["status"] as? String ?? "") else {
            return Self.error(400, "invalid_request_error", "\(object["object"] ?? "object")_unexpected_state", "This object's status is \(object["status"] ?? "?").")
        }
        object["status"] = status
        state.withLock { $0.objects[id] = object }
        return (200, object)
    }

    /// Sets an object's `status`, as Stripe moves it (a subscription paid: `active`).
    func setStatus(_ id: String, _ status: String) {
        state.withLock { state in
            guard var object = state.objects[id] else { return }
            object["status"] = status
            state.objects[id] = object
        }
    }

    /// A trial's card saved: its SetupIntent succeeded, and the subscription has none pending.
    /// - Returns: the SetupIntent's `succeeded` object.
    func confirmSetup(of subscription: String) -> [String: Any] {
        state.withLock { state in
            guard var object = state.objects[subscription], let setup = object["pending_setup_intent"] as? [String: any Sendable] else { return [:] }
            object["pending_setup_intent"] = nil
            state.objects[subscription] = object
            var succeeded: [String: Any] = setup
            succeeded["status"] = "succeeded"
            succeeded["customer"] = object["customer"]
            succeeded["usage"] = "off_session"
            return succeeded
        }
    }

    /// Marks a PaymentIntent paid, as the payment sheet's confirmation would: its `succeeded` object.
    func confirm(_ id: String) -> [String: Any] {
        state.withLock { state in
            guard var object = state.objects[id] else { return [:] }
            object["status"] = "succeeded"
            object["amount_received"] = object["amount"]
            state.objects[id] = object
            return object
        }
    }

    // MARK: The protocol

    private static func form(_ request: Request) async throws -> [(key: String, value: String)] {
        StripeForm.decode(String(buffer: try await request.body.collect(upTo: 1 << 20)))
    }

    private static func value(_ key: String, _ form: [(key: String, value: String)]) -> String? { form.first { $0.key == key }?.value }

    private static func metadata(_ form: [(key: String, value: String)]) -> [String: String] {
        var metadata: [String: String] = [:]
        for (key, value) in form where key.hasPrefix("metadata[") { metadata[String(key.dropFirst(9).dropLast())] = value }
        return metadata
    }

    private static func error(_ status: Int, _ type: String, _ code: String, _ message: String) -> (Int, [String: any Sendable]) {
        (status, ["error": ["type": type, "code": code, "message": message] as [String: any Sendable]])
    }

    /// Checks the key, applies the `Idempotency-Key` rules to a POST, then answers.
    private func serve(
        _ request: Request, _ form: [(key: String, value: String)]?, _ answer: @Sendable ([(key: String, value: String)]) -> (Int, [String: any Sendable])
    ) async -> Response {
        guard request.headers[.authorization] == "Bearer \(Self.apiKey)" else {
            return Self.response(Self.error(401, "invalid_request_error", "api_key_invalid", "Invalid API Key provided"))
        }
        guard let form else { return Self.response(answer([])) }
        let parameters = form.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        let key = request.headers[HTTPField.Name("Idempotency-Key")!]
        state.withLock { $0.bodies.append(parameters) }
        if let key {
            enum Seen { case new, replay(Int, Data), conflict, inFlight }
            let seen = state.withLock { state -> Seen in
                guard let known = state.idempotency[key] else {
                    state.idempotency[key] = (parameters, nil)
                    return .new
                }
                guard known.parameters == parameters else { return .conflict }
                guard let answer = known.answer else { return .inFlight }
                return .replay(answer.status, answer.body)
            }
            switch seen {
            case .conflict:
                return Self.response(Self.error(
                    400, "idempotency_error", "idempotency_key_in_use",
                    "Keys for idempotent requests can only be used with the same parameters they were first used with."))
            case .inFlight:
                return Self.response(Self.error(409, "idempotency_error", "idempotency_key_in_use", "There is currently another in-progress request using this Idempotent Key."))
            case .replay(let status, let body):
                var response = Response(status: .init(code: status), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: body)))
                response.headers[HTTPField.Name("Idempotent-Replayed")!] = "true"
                return response
            case .new:
                break
            }
        }
        let (status, object) = answer(form)
        let body = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        if let key { state.withLock { $0.idempotency[key]?.answer = (status, body) } }
        if let delay = state.withLock({ $0.delay }) { try? await Task.sleep(for: delay) }
        return Response(status: .init(code: status), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: body)))
    }

    private static func response(_ answer: (Int, [String: any Sendable])) -> Response {
        let body = (try? JSONSerialization.data(withJSONObject: answer.1)) ?? Data()
        return Response(status: .init(code: answer.0), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: body)))
    }
}
