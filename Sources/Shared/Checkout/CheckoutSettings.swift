// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// The web checkout's settings (docs/checkout.md), read by ingest (which creates checkouts) and
/// the worker (which cancels the ones nobody confirmed). Without `STRIPE_CHECKOUT_KEY` checkout is
/// off: `POST /v1/iap/payment-intents` answers `503 checkout_not_configured`.
public struct CheckoutSettings: Sendable {
    /// `STRIPE_CHECKOUT_KEY`: a restricted key that may write customers, PaymentIntents,
    /// subscriptions and Checkout Sessions and read prices; not recovery's read-only `STRIPE_API_KEY`.
    public var apiKey: String
    /// `STRIPE_API_VERSION`: the `Stripe-Version` of the calls (default ``StripeCheckoutAPI/defaultVersion``).
    public var apiVersion: String?
    /// `STRIPE_API_BASE_URL`: `https://api.stripe.com`, or a local stand-in.
    public var baseURL: String
    /// `CHECKOUT_TIMEOUT_SECONDS`: how long a checkout request may wait for Stripe before `503`.
    public var timeout: Duration
    /// `CHECKOUT_CONCURRENCY`: checkout requests at Stripe at once, per ingest; more are `503` at once.
    public var concurrency: Int
    /// `CHECKOUT_WINDOW_SECONDS`: how long a checkout may wait for its confirmation before the
    /// worker cancels it at Stripe.
    public var window: TimeInterval
    /// `CHECKOUT_REUSE_SECONDS`: how long the same user and product get the same pending checkout back.
    public var reuseWindow: TimeInterval
    /// `CHECKOUT_CLIENT_KEYS`: whether an app's client key may create checkouts (its user id is
    /// then whatever the app says; rate-limited per address).
    public var allowsClientKeys: Bool

    public static let help = """
          STRIPE_CHECKOUT_KEY       restricted key (rk_…) for web checkout: write Customers, PaymentIntents, Subscriptions, Checkout Sessions; read Prices, SetupIntents (none: checkout off); a test-mode key makes sandbox checkouts
          STRIPE_API_VERSION        Stripe-Version of Sluice's Stripe calls (default for checkout 2025-03-31.basil)
          STRIPE_API_BASE_URL       Stripe's API host, https:// (http:// only to this machine, for a local stand-in) (default https://api.stripe.com)
          CHECKOUT_TIMEOUT_SECONDS  how long creating a checkout waits for Stripe before 503 stripe_unavailable (default 10)
          CHECKOUT_CONCURRENCY      checkout creations at Stripe at once per process; more answer 503 at once (default 16)
          CHECKOUT_WINDOW_SECONDS   a checkout nobody confirms is cancelled at Stripe and failed after this (default 86400)
          CHECKOUT_REUSE_SECONDS    the same user and product get the same pending checkout back within this (default 3600)
          CHECKOUT_CLIENT_KEYS      true: a client key may create checkouts too, for the user id the app gives; an open checkout
                                    goes back to it only for the same Idempotency-Key (default false: server key only)
        """

    /// - Returns: `nil` when `STRIPE_CHECKOUT_KEY` is not set.
    public static func configured(by environment: EnvironmentValues) throws -> CheckoutSettings? {
        guard let key = environment.string("STRIPE_CHECKOUT_KEY") else { return nil }
        guard key.hasPrefix("rk_") || key.hasPrefix("sk_") else {
            throw ConfigurationError(variable: "STRIPE_CHECKOUT_KEY", reason: "is not a Stripe secret or restricted key (rk_… or sk_…)")
        }
        if key == environment.string("STRIPE_API_KEY") {
            throw ConfigurationError(
                variable: "STRIPE_CHECKOUT_KEY", reason: "is recovery's read-only STRIPE_API_KEY; give checkout a restricted key of its own")
        }
        return CheckoutSettings(
            apiKey: key, apiVersion: environment.string("STRIPE_API_VERSION"),
            baseURL: try ProviderBaseURL.read(environment, "STRIPE_API_BASE_URL", default: "https://api.stripe.com"),
            timeout: .milliseconds(Int64(try environment.double("CHECKOUT_TIMEOUT_SECONDS", default: 10, range: 0.1...60) * 1000)),
            concurrency: try environment.int("CHECKOUT_CONCURRENCY", default: 16, range: 1...1_000),
            window: TimeInterval(try environment.int("CHECKOUT_WINDOW_SECONDS", default: 86_400, range: 1...604_800)),
            reuseWindow: TimeInterval(try environment.int("CHECKOUT_REUSE_SECONDS", default: 3_600, range: 0...86_400)),
            allowsClientKeys: try environment.bool("CHECKOUT_CLIENT_KEYS", default: false))
    }
}
