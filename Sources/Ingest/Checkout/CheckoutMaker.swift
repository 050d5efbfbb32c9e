// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import HTTPTypes
import Logging
import Shared

/// Makes a web checkout (`POST /v1/iap/payment-intents`): the user's Stripe Customer, then a
/// PaymentIntent, an incomplete or trialing Subscription, or a hosted Checkout Session, and the
/// pending `checkouts` row that ties them to the app's transaction id (docs/checkout.md).
///
/// Concurrent identical requests make one set of Stripe objects through any ingest: the slot is
/// a row in PostgreSQL (``CheckoutStore/claim(_:claimFor:reuseWindow:now:)``), and each create
/// carries an `Idempotency-Key` derived from the row, so a request repeated after a timeout gets
/// Stripe's first objects back. Stripe is called under ``CheckoutGate`` and ``settings``' timeout:
/// a hung Stripe costs a checkout request a `503`, never a webhook its latency.
struct CheckoutMaker: Sendable {
    struct Ask: Sendable {
        var userID: String
        var productID: String
        var hosted: Bool
        /// `false` buys a product that has a free trial without it.
        var trial: Bool?
        /// A trial that ends then (a user coming from the App Store keeps theirs).
        var trialEnd: Date?
        var successURL: String?
        var cancelURL: String?
        /// `nil` for a server key; an app's client-key request's ``CheckoutStore/requester(idempotencyKey:)``.
        var requester: String?
    }

    struct Made: Sendable {
        var row: CheckoutRow
        var reused: Bool
    }

    let store: CheckoutStore
    let catalog: CatalogStore
    let stripe: StripeCheckoutAPI
    let prices: PriceCache
    let gate: CheckoutGate
    let settings: CheckoutSettings
    let logger: Logger

    /// How long a request waits between looks at a checkout another request is making.
    static let waitStep = Duration.milliseconds(100)

    func make(_ ask: Ask) async throws -> Made {
        // The gate comes first: a request refused while Stripe hangs costs nothing else.
        let made = try await gate.run {
            guard let product = try await catalog.product(ask.productID), product.archivedAt == nil else {
                throw APIError(.notFound, code: "product_not_found", message: "no product \(ask.productID.prefix(100)) is sold (worker products list)")
            }
            guard let reference = product.stripePrice else {
                throw APIError(.conflict, code: "product_not_on_stripe", message: "product \(product.id) has no Stripe price (worker products update --stripe-price)")
            }
            do {
                return try await withTimeout(settings.timeout) { try await self.make(ask, product: product, priceReference: reference) }
            } catch is TimeoutError {
                throw Self.unavailable("Stripe did not answer within \(settings.timeout); try again (the same checkout is answered)")
            } catch let refusal as StripeRefusal where refusal.isOutage {
                throw Self.unavailable("Stripe is unavailable (\(refusal.status.map { "HTTP \($0)" } ?? "no answer")); try again")
            } catch let refusal as StripeRefusal {
                // Refused before any checkout was claimed (reading the price): nothing to free.
                throw Self.refused(refusal)
            }
        }
        guard let made else {
            throw Self.unavailable("\(gate.limit) checkouts are being created with Stripe already (CHECKOUT_CONCURRENCY); try again")
        }
        return made
    }

    private func make(_ ask: Ask, product: CatalogProduct, priceReference: String) async throws -> Made {
        guard let price = try await prices.price(priceReference, logger: logger) else {
            throw APIError(.conflict, code: "price_not_found", message: "Stripe has no price \(priceReference) (product \(product.id))")
        }
        let recurring = price.interval != nil
        guard product.type.fitsStripePrice(recurring: recurring) else {
            throw APIError(
                .conflict, code: "price_mismatch",
                message: "product \(product.id) is \(product.type.rawValue) but Stripe price \(price.id) is \(recurring ? "recurring" : "one-time")")
        }
        let trialDays = recurring && ask.trial != false && ask.trialEnd == nil ? product.trialDays : nil
        let trialEnd = recurring && ask.trial != false ? ask.trialEnd : nil
        if let trialEnd {
            // Stripe: at most 730 days ahead; a Checkout Session's at least 48 hours.
            let ahead = trialEnd.timeIntervalSinceNow
            guard ahead <= 730 * 86_400, !ask.hosted || ahead >= 48 * 3_600 else {
                throw APIError(.badRequest, code: "malformed", message: "trial_end must be at most 730 days ahead (and, hosted, at least 48 hours)")
            }
        }
        let kind: CheckoutKind = ask.hosted ? .hosted : !recurring ? .payment : (trialDays ?? 0) > 0 || trialEnd != nil ? .trial : .subscription
        if kind == .payment, price.unitAmount == nil {
            // A PaymentIntent takes one amount; a tiered or customer-chosen price has none.
            throw APIError(
                .conflict, code: "price_without_amount",
                message: "Stripe price \(price.id) of product \(product.id) has no fixed unit_amount: use mode hosted, or a price with an amount")
        }
        let terms = CheckoutTerms(
            kind: kind, price: price, trialDays: trialDays, trialEnd: trialEnd, successURL: ask.successURL, cancelURL: ask.cancelURL)
        // Stripe keeps a hosted page open for 30 minutes to 24 hours.
        let window = kind == .hosted ? min(max(settings.window, 31 * 60), 24 * 3_600) : settings.window
        // A subscription granting an access level the user already has from another web
        // subscription replaces it once paid (docs/checkout.md, "Replacing a subscription").
        var replaces: String?
        if recurring {
            let grants = AccessLevels.grants(of: try await catalog.all())
            replaces = try await store.replaceable(
                forUser: ask.userID, productID: product.id, levels: grants[product.id] ?? [], grants: grants, in: stripe.environment)
        }
        let request = CheckoutStore.Request(
            userID: ask.userID, productID: product.id, environment: stripe.environment, kind: kind, terms: terms.text, window: window,
            replacesSubscription: replaces, requester: ask.requester)
        let claimFor = Double(settings.timeout.components.seconds) + Double(settings.timeout.components.attoseconds) / 1e18
        while true {
            switch try await store.claim(request, claimFor: claimFor, reuseWindow: settings.reuseWindow) {
            case .reuse(let row):
                return Made(row: row, reused: true)
            case .wait:
                try await Task.sleep(for: Self.waitStep)
            case .make(let row):
                return Made(row: try await makeObjects(of: row, terms: terms), reused: false)
            }
        }
    }

    /// Makes (or, on a takeover, makes again under the same keys) the Stripe objects of `row`.
    private func makeObjects(of row: CheckoutRow, terms: CheckoutTerms) async throws -> CheckoutRow {
        do {
            let customer = try await customer(of: row.userID)
            var metadata = ["user_id": row.userID, "product_id": row.productID, "sluice_transaction_id": row.id.uuidString.lowercased()]
            // Sluice's convention: the replaced subscription's entitlement ends when this one is paid.
            metadata["replaces_subscription"] = row.replacesSubscription
            let objects: StripeCheckoutObjects
            switch row.kind {
            case .payment:
                objects = try await stripe.createPaymentIntent(
                    customer: customer, price: terms.price, metadata: metadata, idempotencyKey: row.idempotencyKey("payment_intent"), logger: logger)
            case .subscription, .trial:
                objects = try await stripe.createSubscription(
                    customer: customer, price: terms.price, trialDays: terms.trialDays, trialEnd: terms.trialEnd, metadata: metadata,
                    idempotencyKey: row.idempotencyKey("subscription"), logger: logger)
            case .hosted:
                objects = try await stripe.createCheckoutSession(
                    customer: customer, price: terms.price, userID: row.userID, trialDays: terms.trialDays, trialEnd: terms.trialEnd,
                    metadata: metadata, successURL: terms.successURL ?? "", cancelURL: terms.cancelURL, expiresAt: row.expiresAt,
                    idempotencyKey: row.idempotencyKey("checkout_session"), logger: logger)
            }
            guard objects.isAnswer else {
                throw StripeRefusal(status: 0, message: "Stripe's answer has no client secret or url for the \(row.kind.rawValue) checkout")
            }
            try await store.answer(row.id, customer: customer, objects: objects)
            var answered = row
            answered.customer = customer
            answered.objects = objects
            answered.claimedUntil = nil
            return answered
        } catch let refusal as StripeRefusal where refusal.isOutage {
            // Not refused, not answered: the next request may repeat the calls at once.
            try? await store.unclaim(row.id)
            throw refusal
        } catch is CancellationError {
            try? await store.unclaim(row.id)
            throw CancellationError()
        } catch let refusal as StripeRefusal {
            // Stripe said no (a parameter, the key's permissions): nothing to wait for, the slot is free.
            try? await store.abandon(row.id)
            logger.warning("Stripe refused a checkout", metadata: ["checkout": "\(row.id)", "refusal": "\(Self.withoutKeys(refusal.description))"])
            throw Self.refused(refusal)
        }
    }

    /// The user's Customer: the stored one, or one made under a key derived from the user, so two
    /// first checkouts at once make one customer.
    private func customer(of userID: String) async throws -> String {
        let environment = stripe.environment
        if let known = try await store.customer(of: userID, in: environment) { return known }
        let digest = SHA256.hash(data: Data(userID.utf8)).map { String(format: "%02x", $0) }.joined()
        let made = try await stripe.createCustomer(
            userID: userID, idempotencyKey: "sluice-customer-\(environment.rawValue)-\(digest)", logger: logger)
        return try await store.saveCustomer(made, of: userID, in: environment)
    }

    /// Stripe's message with anything that looks like an API key (`sk_live_…`, `rk_test_…`) taken out.
    static func withoutKeys(_ message: String) -> String {
        message.replacing(/(sk|rk|pk)_(live|test)_[A-Za-z0-9*]+/, with: "[key]")
    }

    /// `502 stripe_refused`: Stripe said no, or answered without what a checkout needs; Stripe's
    /// message is passed on without anything shaped like a key.
    static func refused(_ refusal: StripeRefusal) -> APIError {
        APIError(.badGateway, code: "stripe_refused", message: "Stripe refused the checkout: \(withoutKeys(refusal.message))")
    }

    static func unavailable(_ message: String) -> APIError {
        APIError(.serviceUnavailable, code: "stripe_unavailable", message: message, headers: [.retryAfter: "1"])
    }
}
