// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Shared

/// What recovery and reconciliation need (docs/CONTRACT.md, "Configuration"): each provider is off until
/// its credentials are set. Keys are held here and in the clients only; never logged or printed.
struct RecoverySettings: Sendable {
    /// The App Store Server API: an In-App Purchase key and what verifies its answers.
    struct Apple: Sendable {
        var keyID: String
        var issuerID: String
        var privateKey: P256.Signing.PrivateKey
        /// `APPLE_BUNDLE_IDS`: one token (its `bid`) and one notification history per app.
        var bundleIDs: [String]
        /// Verifies every signed payload of an answer exactly like a webhook.
        var verifier: AppleNotificationVerifier
        var baseURLs: [PurchaseEnvironment: String]
    }

    /// The Stripe API: a restricted key (read events and subscriptions) and the version it reads.
    struct Stripe: Sendable {
        var apiKey: String
        var apiVersion: String?
        var baseURL: String
        /// Test keys (`rk_test_`, `sk_test_`) see test mode only: that is the environment they recover.
        var environment: PurchaseEnvironment { apiKey.contains("_test_") ? .sandbox : .production }
    }

    var apple: Apple?
    var stripe: Stripe?
    /// `GOOGLE_PLAY_SERVICE_ACCOUNT_FILE`: the Play Developer API, for Play pushes, acknowledgements,
    /// voided purchases and reconciliation.
    var play: GooglePlayAPISettings?
    /// `RECOVERY_INTERVAL_SECONDS`: how often `worker run` recovers and reconciles; `nil` is off.
    var interval: Duration?
    /// `ENTITLEMENT_LEEWAY_SECONDS`: past `expires_at` plus this, an entitlement is due a check.
    /// `EVENT_SIGNING_KEY`: recovered and reconciliation events are proven as ingest proves its own.
    var eventProof: EventProof?
    var leeway: TimeInterval
    /// `RECONCILE_AFTER_SECONDS`: an entitlement with no event for this long is due a check.
    var reconcileAfter: TimeInterval
    /// `RECONCILE_RECHECK_SECONDS`: how long after a check an entitlement may be checked again.
    var recheckAfter: TimeInterval
    /// `RECONCILE_BATCH`: the most entitlements checked in one cycle.
    var reconcileBatch: Int
    /// `RECONCILE_RATE`: provider calls a second, at most.
    var callsPerSecond: Double

    static let help = HelpText.wrapped("""
          APPLE_API_KEY_ID, APPLE_API_ISSUER_ID, APPLE_API_PRIVATE_KEY_FILE
                                    App Store Server API key (In-App Purchase key, .p8) for recovery and reconciliation (default: Apple recovery off)
          APPLE_BUNDLE_IDS          the apps whose notifications are recovered (required with an Apple key)
          APPLE_ROOT_CERTIFICATES   roots that recovered Apple payloads must chain to, as in ingest (default: Apple Root CA - G3, built in)
          APPLE_APP_APPLE_ID        numeric app id checked on recovered Production payloads (optional)
          STRIPE_API_KEY            restricted key that may read events and subscriptions (default: Stripe recovery off)
          STRIPE_API_VERSION        Stripe-Version of API calls (default: the account's)
          APPLE_API_BASE_URL, APPLE_API_SANDBOX_BASE_URL, STRIPE_API_BASE_URL
                                    provider API hosts (tests, proxies)
          RECOVERY_INTERVAL_SECONDS how often worker run recovers missed events and reconciles (default 900; 0 off)
          RECONCILE_AFTER_SECONDS   an entitlement with no event for this long is checked with the provider (default 3024000, 35 days)
          RECONCILE_RECHECK_SECONDS how long before an entitlement is checked again (default 86400)
          RECONCILE_BATCH           entitlements checked per cycle (default 200)
          RECONCILE_RATE            provider calls per second, at most (default 5)
        """)

    init(environment: EnvironmentValues) throws {
        eventProof = try EventProof.configured(by: environment)
        let interval = try environment.int("RECOVERY_INTERVAL_SECONDS", default: 900, range: 0...86_400)
        self.interval = interval == 0 ? nil : .seconds(interval)
        leeway = try AccessRules(environment: environment).leeway
        reconcileAfter = Double(try environment.int("RECONCILE_AFTER_SECONDS", default: 35 * 86_400, range: 60...(400 * 86_400)))
        recheckAfter = Double(try environment.int("RECONCILE_RECHECK_SECONDS", default: 86_400, range: 0...(30 * 86_400)))
        reconcileBatch = try environment.int("RECONCILE_BATCH", default: 200, range: 1...10_000)
        callsPerSecond = try environment.double("RECONCILE_RATE", default: 5, range: 0.1...1_000)
        apple = try Self.apple(environment)
        stripe = try Self.stripe(environment)
        play = try GooglePlayAPISettings.configured(by: environment)
    }

    private static func apple(_ environment: EnvironmentValues) throws -> Apple? {
        guard let api = try AppStoreAPISettings.configured(by: environment) else { return nil }
        let (keyID, issuerID, privateKey, bundleIDs) = (api.keyID, api.issuerID, api.privateKey, api.bundleIDs)
        // Recovered payloads are verified like webhooks: against Apple Root CA - G3 unless told otherwise.
        let roots = try AppleTrustedRoots.configured(by: environment)
        var appAppleID: Int64?
        if let text = environment.string("APPLE_APP_APPLE_ID") {
            guard let id = Int64(text), id > 0 else {
                throw ConfigurationError(variable: "APPLE_APP_APPLE_ID", reason: "must be a positive whole number")
            }
            appAppleID = id
        }
        let verifier = AppleNotificationVerifier(
            chainVerifier: AppleChainVerifier(
                trustedRoots: roots.certificates, revocationCheck: try AppleRevocationCheck.configured(by: environment)),
            configuration: .init(bundleIDs: Set(bundleIDs), appAppleID: appAppleID))
        return Apple(keyID: keyID, issuerID: issuerID, privateKey: privateKey, bundleIDs: bundleIDs, verifier: verifier, baseURLs: api.baseURLs)
    }

    private static func stripe(_ environment: EnvironmentValues) throws -> Stripe? {
        guard let key = environment.string("STRIPE_API_KEY") else { return nil }
        guard key.hasPrefix("rk_") || key.hasPrefix("sk_") else {
            throw ConfigurationError(variable: "STRIPE_API_KEY", reason: "is not a Stripe secret or restricted key (rk_… or sk_…)")
        }
        return Stripe(
            apiKey: key, apiVersion: environment.string("STRIPE_API_VERSION"),
            baseURL: try ProviderBaseURL.read(environment, "STRIPE_API_BASE_URL", default: "https://api.stripe.com"))
    }
}
