// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// The receiver's environment variables (docs/CONTRACT.md), read once at start.
///
/// Secrets are kept only in the verifiers built from them; they are never logged or echoed.
struct IngestSettings: Sendable {
    var database: DatabaseURL
    /// A streaming replica the read API reads from while its lag is within ``readMaximumLag``.
    var readDatabase: DatabaseURL?
    /// `READ_MAX_LAG_SECONDS`: how stale a replica read may be before reads go to the primary.
    var readMaximumLag: TimeInterval = 5
    var host: String
    var port: Int
    /// `INGEST_ADMIN_HOST`, `INGEST_ADMIN_PORT`: where `/readyz` and `/metrics` are served, apart
    /// from the webhook and API port the internet reaches.
    var adminHost: String
    var adminPort: Int
    var stripeSecrets: [String]
    var stripeToleranceSeconds: Int64
    /// The roots Apple payloads must chain to; `nil` when `APPLE_BUNDLE_IDS` is not set (the
    /// Apple endpoints answer 503).
    var appleRoots: AppleTrustedRoots?
    var appleBundleIDs: Set<String>
    var appleAppAppleID: Int64?
    /// `APPLE_ONLINE_CHECKS`: OCSP checks of Apple's signing chain, or `nil`.
    var appleRevocationCheck: AppleRevocationCheck?
    /// `API_KEYS`: the server keys' SHA-256 digests (read API and StoreKit sync).
    var apiKeys: [[UInt8]]
    /// `CLIENT_API_KEYS`: the app keys' digests (the StoreKit sync only).
    var clientAPIKeys: [[UInt8]]
    var maxBodyBytes: Int
    var requestTimeoutSeconds: Int
    /// How long a webhook waits for its commit before it is answered `503` so the provider
    /// retries. Not an environment setting: providers wait longer than this, and only tests on an
    /// overloaded machine, where a first connection can take seconds, have reason to lengthen it.
    var storeTimeout = defaultStoreTimeout
    static let defaultStoreTimeout = Duration.seconds(5)
    /// `ENTITLEMENT_LEEWAY_SECONDS`: how long past `expires_at` an entitlement still reads active
    /// while the provider's renewal arrives.
    var entitlementLeewaySeconds: Int
    /// `READ_API_ENVIRONMENT`: the read API's `environment` when a request gives none.
    var readEnvironment: EnvironmentFilter
    /// `SANDBOX_ACCESS`, `SANDBOX_USERS`: whether Sandbox and test-mode entitlements give access.
    var sandboxAccess: SandboxAccess
    /// `SYNC_MAX_USERS_PER_TRANSACTION`: how many users one purchase may be synced for.
    var syncMaxUsersPerTransaction: Int
    /// `RATE_LIMIT_PER_KEY`, `RATE_LIMIT_PER_ADDRESS`: requests per second (0: off).
    var rateLimitPerKey: Double
    var rateLimitPerAddress: Double
    /// `TRUST_FORWARDED_FOR`: behind a trusted proxy (deploy/nginx.conf, ingress-nginx), the client
    /// address is the last `X-Forwarded-For` entry, the one that proxy appended.
    var trustForwardedFor: Bool
    /// `EVENT_SIGNING_KEY`: the proof each stored row carries, which the worker checks.
    var eventProof: EventProof?
    /// `STRIPE_CHECKOUT_KEY` and the `CHECKOUT_*` settings: web checkout, or `nil` when it is off.
    var checkout: CheckoutSettings?
    /// The App Store Server API, for StoreKit 1 receipts; `nil` without its key.
    var appStoreAPI: AppStoreAPISettings?
    /// `GOOGLE_PLAY_PACKAGE_NAMES` and the push subscription's identity; `nil` when Play is off.
    var googlePush: GooglePushSettings?
    /// `GOOGLE_PLAY_SERVICE_ACCOUNT_FILE`: the Play Developer API, for apps' Play syncs; `nil` without it.
    var googlePlayAPI: GooglePlayAPISettings?
    var logLevel: String
    var logFormat: String

    /// The text `ingest --help` shows.
    static let help = HelpText.wrapped("""
        Environment:
          DATABASE_URL              postgres://user:pass@host:port/db[?sslmode=…] (required; sslmode default prefer)
          DATABASE_PASSWORD         the password, when DATABASE_URL has none (as PGPASSWORD; use DATABASE_PASSWORD_FILE)
          DATABASE_TIMEOUT_SECONDS  how long a request waits for the database before it is answered 503 database_unavailable (default 5)
          READ_DATABASE_URL         a streaming replica the read API reads from (its own credentials); writes and syncs stay on DATABASE_URL
          READ_MAX_LAG_SECONDS      reads go to the primary while the replica may be staler than this (default 5)
          INGEST_HOST, INGEST_PORT  listen address of the webhooks and the API, with /healthz (default 0.0.0.0, 8080)
          INGEST_ADMIN_HOST, INGEST_ADMIN_PORT  listen address of /healthz, /readyz and /metrics; keep it off the internet (default INGEST_HOST, 9091)
          STRIPE_WEBHOOK_SECRETS    comma-separated whsec_… secrets; any one may match (none: the Stripe endpoint answers 503)
          STRIPE_TOLERANCE_SECONDS  largest age of the Stripe-Signature timestamp (default 300)
          APPLE_ROOT_CERTIFICATES   comma-separated DER or PEM root files (default: Apple Root CA - G3, built in)
          APPLE_BUNDLE_IDS          comma-separated bundle ids accepted (none: the Apple endpoints answer 503)
          APPLE_APP_APPLE_ID        numeric app id checked on Production payloads (optional)
          API_KEYS                  comma-separated server keys: read API and StoreKit sync; each ≥ 32 characters or sha256:<hex> (none: they answer 401)
          CLIENT_API_KEYS           comma-separated app keys: the StoreKit sync only (403 on the read API); same form
          READ_API_ENVIRONMENT      production, sandbox or all: the read API's environment when a request names none (default all)
          SANDBOX_ACCESS            anybody, listed or nobody: whose Sandbox and Stripe test-mode entitlements give access (default anybody, for App Review)
          SYNC_MAX_USERS_PER_TRANSACTION how many users one purchase may be synced for; more is 409 too_many_users (default 10)
          RATE_LIMIT_PER_KEY        API requests per second per key (may be fractional), bursts of twice that or 2; over it 429; for a client key, a ceiling on the whole app's syncs, counted only for requests its address's limit admitted (default 1000; 0: off)
          RATE_LIMIT_PER_ADDRESS    client-key requests (app syncs) per second per client address, bursts of twice that or 20, checked first (default 5; 0: off)
          TRUST_FORWARDED_FOR       true behind a trusted proxy that appends the client address to X-Forwarded-For (deploy/nginx.conf, ingress-nginx) and when nothing else reaches ingest: the client address is the last entry (default false)
          EVENT_SIGNING_KEY         ≥ 32 characters, the same on ingest and worker: rows carry its HMAC, and the worker applies no row without it
        \(CheckoutSettings.help)
          APPLE_API_KEY_ID, APPLE_API_ISSUER_ID, APPLE_API_PRIVATE_KEY_FILE
                                    App Store Server API key (In-App Purchase key, .p8) for StoreKit 1 receipts (none: /v1/iap/receipts answers 503)
          APPLE_API_BASE_URL, APPLE_API_SANDBOX_BASE_URL  the App Store Server API hosts (tests, proxies)
        \(GooglePushSettings.help)
          GOOGLE_PLAY_SERVICE_ACCOUNT_FILE the Play Developer API's service account key, for POST /v1/iap/play-purchases (none: it answers 503)
          GOOGLE_PLAY_API_BASE_URL  the Android Publisher host (default https://androidpublisher.googleapis.com)
          SANDBOX_USERS             with SANDBOX_ACCESS=listed: comma-separated user ids or sha256:<hex> of user ids
          ENTITLEMENT_LEEWAY_SECONDS how long past its expiry an entitlement still reads active while its renewal arrives (default 3600)
          MAX_BODY_BYTES            request body limit (default 1048576)
          REQUEST_TIMEOUT_SECONDS   time a request body may take to arrive before 408 (default 10)
          LOG_LEVEL, LOG_FORMAT     trace…critical (default info); json or text (default json)
          NAME_FILE                 for DATABASE_URL and every secret: read the value from this file instead (Docker and Kubernetes secrets)
        """)

    init(environment: EnvironmentValues) throws {
        database = try DatabaseURL(environment: environment)
        readDatabase = try environment.string("READ_DATABASE_URL").map { try DatabaseURL($0, variable: "READ_DATABASE_URL") }
        readMaximumLag = try environment.double("READ_MAX_LAG_SECONDS", default: 5, range: 0.5...3_600)
        host = environment.string("INGEST_HOST") ?? "0.0.0.0"
        port = try environment.int("INGEST_PORT", default: 8080, range: 0...65_535)
        adminHost = environment.string("INGEST_ADMIN_HOST") ?? host
        adminPort = try environment.int("INGEST_ADMIN_PORT", default: 9091, range: 0...65_535)
        if adminPort == port, port != 0 {
            throw ConfigurationError(variable: "INGEST_ADMIN_PORT", reason: "must differ from INGEST_PORT")
        }
        stripeSecrets = environment.list("STRIPE_WEBHOOK_SECRETS")
        for secret in stripeSecrets where !secret.hasPrefix("whsec_") {
            throw ConfigurationError(variable: "STRIPE_WEBHOOK_SECRETS", reason: "holds an entry that does not start with whsec_")
        }
        stripeToleranceSeconds = Int64(try environment.int("STRIPE_TOLERANCE_SECONDS", default: 300, range: 1...86_400))
        appleBundleIDs = Set(environment.list("APPLE_BUNDLE_IDS"))
        let roots = try AppleTrustedRoots.configured(by: environment)
        if roots.areConfigured && appleBundleIDs.isEmpty {
            throw ConfigurationError(variable: "APPLE_BUNDLE_IDS", reason: "is required when APPLE_ROOT_CERTIFICATES is set")
        }
        appleRoots = appleBundleIDs.isEmpty ? nil : roots
        if let text = environment.string("APPLE_APP_APPLE_ID") {
            guard let id = Int64(text), id > 0 else {
                throw ConfigurationError(variable: "APPLE_APP_APPLE_ID", reason: "must be a positive whole number")
            }
            appleAppAppleID = id
        }
        appleRevocationCheck = try AppleRevocationCheck.configured(by: environment)
        apiKeys = try APIKeyDigests.parse(environment.list("API_KEYS"), variable: "API_KEYS")
        clientAPIKeys = try APIKeyDigests.parse(environment.list("CLIENT_API_KEYS"), variable: "CLIENT_API_KEYS")
        maxBodyBytes = try environment.int("MAX_BODY_BYTES", default: 1_048_576, range: 1_024...(64 << 20))
        requestTimeoutSeconds = try environment.int("REQUEST_TIMEOUT_SECONDS", default: 10, range: 1...300)
        let access = try AccessRules(environment: environment)
        entitlementLeewaySeconds = access.leewaySeconds
        let readEnvironment = environment.string("READ_API_ENVIRONMENT")?.lowercased() ?? EnvironmentFilter.all.rawValue
        guard let filter = EnvironmentFilter(rawValue: readEnvironment) else {
            throw ConfigurationError(variable: "READ_API_ENVIRONMENT", reason: "must be one of \(EnvironmentFilter.accepted)")
        }
        self.readEnvironment = filter
        sandboxAccess = access.sandboxAccess
        syncMaxUsersPerTransaction = try environment.int("SYNC_MAX_USERS_PER_TRANSACTION", default: 10, range: 1...10_000)
        rateLimitPerKey = try environment.double("RATE_LIMIT_PER_KEY", default: 1_000, range: 0...1_000_000)
        rateLimitPerAddress = try environment.double("RATE_LIMIT_PER_ADDRESS", default: 5, range: 0...1_000_000)
        trustForwardedFor = try environment.bool("TRUST_FORWARDED_FOR", default: false)
        eventProof = try EventProof.configured(by: environment)
        checkout = try CheckoutSettings.configured(by: environment)
        appStoreAPI = try AppStoreAPISettings.configured(by: environment)
        googlePush = try GooglePushSettings.configured(by: environment)
        googlePlayAPI = try GooglePlayAPISettings.configured(by: environment)
        (logLevel, logFormat) = try LoggingSetup.validate(environment: environment)
    }
}

extension IngestSettings {
    /// The webhooks' and API's listen address, and what sets it.
    var publicAddress: NamedListener.Address {
        .init(host: host, port: port, hostVariable: "INGEST_HOST", portVariable: "INGEST_PORT")
    }

    /// The admin listen address, and what sets it.
    var adminAddress: NamedListener.Address {
        .init(host: adminHost, port: adminPort, hostVariable: "INGEST_ADMIN_HOST", portVariable: "INGEST_ADMIN_PORT")
    }
}
