// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
public import Foundation
public import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// Stripe's answer refusing a request (`{"error":{"type","code","message","param"}}`), or no
/// documented answer at all (`status` `nil`: no answer; `0`: Stripe answered, but without what
/// Sluice needs from it — asking again gets the same answer, so it is not an outage).
public struct StripeRefusal: Error, CustomStringConvertible, Equatable {
    public var status: Int?
    public var type: String?
    public var code: String?
    public var message: String

    public init(status: Int?, type: String? = nil, code: String? = nil, message: String) {
        self.status = status
        self.type = type
        self.code = code
        self.message = message
    }

    public var description: String {
        "Stripe API: " + (status.map { "HTTP \($0): " } ?? "") + [type, code].compactMap { $0 }.joined(separator: "/")
            + (type == nil && code == nil ? "" : ": ") + message
    }

    /// Stripe (or the way to it) failed, or a request under the same `Idempotency-Key` is still in
    /// flight on Stripe's side (`409`): retrying the same request later may work. An
    /// `idempotency_error` (`400`: the key used with other parameters) is a refusal.
    public var isOutage: Bool { status == nil || status! == 429 || status! >= 500 || status == 409 }
}

/// A Stripe price as a paywall shows it (`GET /v1/prices/{id}`).
public struct StripePrice: Sendable, Equatable, Codable {
    public var id: String
    /// In the currency's minor units; `nil` for a price without a fixed amount (tiers, custom).
    public var unitAmount: Int64?
    public var currency: String
    /// `day`, `week`, `month`, `year` for a recurring price; `nil` for one-time.
    public var interval: String?
    public var intervalCount: Int?

    public init(id: String, unitAmount: Int64?, currency: String, interval: String? = nil, intervalCount: Int? = nil) {
        self.id = id
        self.unitAmount = unitAmount
        self.currency = currency
        self.interval = interval
        self.intervalCount = intervalCount
    }
}

/// What a create call made: the ids to keep and the secret or page the app confirms.
public struct StripeCheckoutObjects: Sendable, Equatable {
    public var paymentIntent: String?
    public var subscription: String?
    public var invoice: String?
    public var setupIntent: String?
    public var checkoutSession: String?
    public var clientSecret: String?
    public var checkoutURL: String?

    /// Whether these are a checkout's answer: what the app confirms or opens, or a subscription
    /// Stripe made with nothing to confirm (its first invoice needed no payment).
    public var isAnswer: Bool { clientSecret != nil || checkoutURL != nil || subscription != nil }

    public init(
        paymentIntent: String? = nil, subscription: String? = nil, invoice: String? = nil, setupIntent: String? = nil,
        checkoutSession: String? = nil, clientSecret: String? = nil, checkoutURL: String? = nil
    ) {
        self.paymentIntent = paymentIntent
        self.subscription = subscription
        self.invoice = invoice
        self.setupIntent = setupIntent
        self.checkoutSession = checkoutSession
        self.clientSecret = clientSecret
        self.checkoutURL = checkoutURL
    }
}

/// The Stripe calls that start and cancel a web checkout, with the restricted write key
/// `STRIPE_CHECKOUT_KEY` and a pinned `Stripe-Version` (docs/checkout.md lists the permissions).
///
/// Every create carries the `Idempotency-Key` it is given: the same key and parameters replay
/// Stripe's first answer, so a request repeated after a timeout never makes a second object.
public struct StripeCheckoutAPI: Sendable {
    public let call: ProviderCall
    public let apiKey: String
    /// The `Stripe-Version` sent: which shape the answers have (where a subscription's client secret is).
    public let apiVersion: String
    public let baseURL: String

    /// The version this code reads best; an older one is read too.
    public static let defaultVersion = "2025-03-31.basil"

    public init(call: ProviderCall, apiKey: String, apiVersion: String?, baseURL: String) {
        self.call = call
        self.apiKey = apiKey
        self.apiVersion = apiVersion ?? Self.defaultVersion
        self.baseURL = baseURL
    }

    /// A test-mode key (`sk_test_`, `rk_test_`) makes test-mode objects: Sluice's `sandbox`.
    public var environment: PurchaseEnvironment { apiKey.contains("_test_") ? .sandbox : .production }

    /// From `2025-03-31.basil` an invoice has no `payment_intent`; its client secret is at `confirmation_secret`.
    var invoicesHaveConfirmationSecrets: Bool { apiVersion >= "2025-03-31" }

    /// `GET /v1/prices/{id}`, or for a lookup key `GET /v1/prices?lookup_keys[]=…&active=true`; `nil` when none.
    public func price(_ idOrLookupKey: String, logger: Logger) async throws -> StripePrice? {
        let object: [String: Any]?
        if idOrLookupKey.hasPrefix("price_") || idOrLookupKey.hasPrefix("plan_") {
            do {
                object = try await send("GET", "/v1/prices/" + StripeForm.escape(idOrLookupKey), logger: logger)
            } catch let refusal as StripeRefusal where refusal.status == 404 {
                return nil
            }
        } else {
            let list = try await send("GET", "/v1/prices?active=true&lookup_keys%5B%5D=" + StripeForm.escape(idOrLookupKey), logger: logger)
            object = (list["data"] as? [[String: Any]])?.first
        }
        guard let object else { return nil }
        guard let id = object["id"] as? String, let currency = object["currency"] as? String else {
            throw StripeRefusal(status: 0, message: "the price answer has no id or currency")
        }
        let recurring = object["recurring"] as? [String: Any]
        return StripePrice(
            id: id, unitAmount: (object["unit_amount"] as? NSNumber)?.int64Value, currency: currency,
            interval: recurring?["interval"] as? String, intervalCount: (recurring?["interval_count"] as? NSNumber)?.intValue)
    }

    /// `POST /v1/customers` with `metadata[user_id]`: the customer's id.
    public func createCustomer(userID: String, idempotencyKey: String, logger: Logger) async throws -> String {
        var form = StripeForm()
        form.addMetadata(["user_id": userID])
        let object = try await send("POST", "/v1/customers", form: form, idempotencyKey: idempotencyKey, logger: logger)
        guard let id = object["id"] as? String else { throw StripeRefusal(status: 0, message: "the customer answer has no id") }
        return id
    }

    /// `POST /v1/payment_intents`: a one-time payment of `price`, confirmed by the app's payment sheet.
    public func createPaymentIntent(
        customer: String, price: StripePrice, metadata: [String: String], idempotencyKey: String, logger: Logger
    ) async throws -> StripeCheckoutObjects {
        guard let amount = price.unitAmount else {
            throw StripeRefusal(status: 0, message: "price \(price.id) has no fixed unit_amount to charge")
        }
        var form = StripeForm()
        form.add("amount", String(amount))
        form.add("currency", price.currency)
        form.add("customer", customer)
        form.add("automatic_payment_methods[enabled]", "true")
        form.addMetadata(metadata)
        let object = try await send("POST", "/v1/payment_intents", form: form, idempotencyKey: idempotencyKey, logger: logger)
        return StripeCheckoutObjects(paymentIntent: object["id"] as? String, clientSecret: object["client_secret"] as? String)
    }

    /// `POST /v1/subscriptions` with `payment_behavior=default_incomplete`: the first invoice's
    /// client secret (`latest_invoice.confirmation_secret` from basil, its PaymentIntent's before);
    /// with a trial, a `trialing` subscription and its `pending_setup_intent`'s secret.
    ///
    /// A subscription Stripe made `active` (a first invoice of 0, or paid from the customer's
    /// credit balance), or `trialing` without a SetupIntent, has nothing to confirm: its ids come
    /// back without a client secret. Any other answer without one is refused (status `0`); Stripe
    /// ends an `incomplete` subscription nobody paid by itself after 23 hours.
    public func createSubscription(
        customer: String, price: StripePrice, trialDays: Int?, trialEnd: Date? = nil, metadata: [String: String], idempotencyKey: String,
        logger: Logger
    ) async throws -> StripeCheckoutObjects {
        let trial = trialDays != nil || trialEnd != nil
        var form = StripeForm()
        form.add("customer", customer)
        form.add("items[0][price]", price.id)
        form.add("payment_behavior", "default_incomplete")
        form.add("payment_settings[save_default_payment_method]", "on_subscription")
        form.add("trial_period_days", trialDays)
        form.add("trial_end", trialEnd.map { Int($0.timeIntervalSince1970) })
        form.addMetadata(metadata)
        if trial {
            form.expand("pending_setup_intent")
        } else {
            form.expand(invoicesHaveConfirmationSecrets ? "latest_invoice.confirmation_secret" : "latest_invoice.payment_intent")
        }
        let object = try await send("POST", "/v1/subscriptions", form: form, idempotencyKey: idempotencyKey, logger: logger)
        let invoice = object["latest_invoice"] as? [String: Any]
        let setupIntent = object["pending_setup_intent"] as? [String: Any]
        let secret = trial
            ? setupIntent?["client_secret"] as? String
            : (invoice?["confirmation_secret"] as? [String: Any])?["client_secret"] as? String
                ?? (invoice?["payment_intent"] as? [String: Any])?["client_secret"] as? String
        let status = object["status"] as? String
        guard secret != nil || Self.needsNoConfirmation(status: status, pendingSetupIntent: object["pending_setup_intent"] != nil && !(object["pending_setup_intent"] is NSNull)) else {
            throw StripeRefusal(status: 0, message: "Stripe's \(status ?? "unknown") subscription has no client secret to confirm")
        }
        return StripeCheckoutObjects(
            paymentIntent: (invoice?["payment_intent"] as? [String: Any])?["id"] as? String, subscription: object["id"] as? String,
            invoice: invoice?["id"] as? String ?? object["latest_invoice"] as? String, setupIntent: setupIntent?["id"] as? String,
            clientSecret: secret)
    }

    /// `POST /v1/checkout/sessions`: a Stripe-hosted page for `price`, open until `expiresAt`
    /// (Stripe takes 30 minutes to 24 hours).
    public func createCheckoutSession(
        customer: String, price: StripePrice, userID: String, trialDays: Int?, trialEnd: Date? = nil, metadata: [String: String],
        successURL: String, cancelURL: String?, expiresAt: Date, idempotencyKey: String, logger: Logger
    ) async throws -> StripeCheckoutObjects {
        let subscription = price.interval != nil
        var form = StripeForm()
        form.add("mode", subscription ? "subscription" : "payment")
        form.add("customer", customer)
        form.add("client_reference_id", userID)
        form.add("line_items[0][price]", price.id)
        form.add("line_items[0][quantity]", "1")
        form.add("success_url", successURL)
        form.add("cancel_url", cancelURL)
        form.add("expires_at", String(Int64(expiresAt.timeIntervalSince1970)))
        form.addMetadata(metadata)
        // The session's metadata is not copied to what it makes: the payment or subscription gets its own.
        form.addMetadata(metadata, under: subscription ? "subscription_data[metadata]" : "payment_intent_data[metadata]")
        if subscription {
            form.add("subscription_data[trial_period_days]", trialDays)
            form.add("subscription_data[trial_end]", trialEnd.map { Int($0.timeIntervalSince1970) })
        }
        let object = try await send("POST", "/v1/checkout/sessions", form: form, idempotencyKey: idempotencyKey, logger: logger)
        return StripeCheckoutObjects(checkoutSession: object["id"] as? String, checkoutURL: object["url"] as? String)
    }

    /// `POST /v1/payment_intents/{id}/cancel`; a PaymentIntent no longer cancellable is left as it is.
    public func cancelPaymentIntent(_ id: String, idempotencyKey: String, logger: Logger) async throws {
        try await ignoringUncancellable {
            _ = try await send("POST", "/v1/payment_intents/\(StripeForm.escape(id))/cancel", form: StripeForm(), idempotencyKey: idempotencyKey, logger: logger)
        }
    }

    /// `GET /v1/subscriptions/{id}`: whether nobody has paid or given a card for it yet —
    /// `incomplete`, or `trialing` with its `pending_setup_intent` still there. One Stripe no
    /// longer has is not (there is nothing to cancel).
    public func isUnconfirmedSubscription(_ id: String, logger: Logger) async throws -> Bool {
        let object: [String: Any]
        do {
            object = try await send("GET", "/v1/subscriptions/" + StripeForm.escape(id), logger: logger)
        } catch let refusal as StripeRefusal where refusal.status == 404 {
            return false
        }
        return Self.isUnconfirmed(status: object["status"] as? String, pendingSetupIntent: object["pending_setup_intent"] is String || object["pending_setup_intent"] is [String: Any])
    }

    /// A subscription just made that the customer has nothing to confirm for: Stripe made it
    /// `active` (its first invoice needed no payment), or `trialing` without a SetupIntent.
    public static func needsNoConfirmation(status: String?, pendingSetupIntent: Bool) -> Bool {
        status == "active" || (status == "trialing" && !pendingSetupIntent)
    }

    /// The rule of ``isUnconfirmedSubscription(_:logger:)``.
    public static func isUnconfirmed(status: String?, pendingSetupIntent: Bool) -> Bool {
        status == "incomplete" || (status == "trialing" && pendingSetupIntent)
    }

    /// `DELETE /v1/subscriptions/{id}`: it ends at once; with `prorate`, the unused time of its
    /// period is credited to the customer (a replaced subscription).
    public func cancelSubscription(_ id: String, prorate: Bool = false, logger: Logger) async throws {
        try await ignoringUncancellable {
            _ = try await send("DELETE", "/v1/subscriptions/" + StripeForm.escape(id) + (prorate ? "?prorate=true" : ""), logger: logger)
        }
    }

    /// `POST /v1/checkout/sessions/{id}/expire`: only an `open` session can be expired.
    public func expireCheckoutSession(_ id: String, idempotencyKey: String, logger: Logger) async throws {
        try await ignoringUncancellable {
            _ = try await send("POST", "/v1/checkout/sessions/\(StripeForm.escape(id))/expire", form: StripeForm(), idempotencyKey: idempotencyKey, logger: logger)
        }
    }

    /// A cancel of what already ended, was paid, or is gone is refused with `400`/`404`: nothing
    /// is left to cancel, so that is not a failure.
    private func ignoringUncancellable(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let refusal as StripeRefusal where refusal.status == 400 || refusal.status == 404 {
            return
        }
    }

    private func send(
        _ method: String, _ path: String, form: StripeForm? = nil, idempotencyKey: String? = nil, logger: Logger
    ) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "Authorization", value: "Bearer " + apiKey)
        request.headers.add(name: "Stripe-Version", value: apiVersion)
        if let idempotencyKey { request.headers.add(name: "Idempotency-Key", value: idempotencyKey) }
        if let form {
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: form.encoded))
        }
        let answer: (status: Int, body: ByteBuffer)
        do {
            answer = try await call.send(request, logger: logger)
        } catch let error as ProviderAPIError {
            throw StripeRefusal(status: error.status, message: error.message)
        }
        let object = try? JSONSerialization.jsonObject(with: Data(buffer: answer.body)) as? [String: Any]
        guard (200..<300).contains(answer.status), let object else {
            let error = object?["error"] as? [String: Any]
            throw StripeRefusal(
                status: answer.status, type: error?["type"] as? String, code: error?["code"] as? String,
                message: (error?["message"] as? String).map { String($0.prefix(300)) } ?? "an answer that is not the documented JSON")
        }
        return object
    }
}
