// SPDX-License-Identifier: Apache-2.0
import Shared

/// The worker's environment variables (docs/CONTRACT.md), read once at start.
struct WorkerSettings: Sendable {
    var database: DatabaseURL
    var concurrency: Int
    /// `WORKER_BATCH_SIZE`: the most events applied in one transaction.
    var batchSize: Int
    /// `WORKER_LISTEN`: whether new work is announced by LISTEN/NOTIFY (off behind a pooler in
    /// transaction mode, where LISTEN does not work); without it the pool finds work by polling.
    var listens: Bool
    /// `WORKER_LISTEN_DATABASE_URL`: a direct connection for LISTEN alone, when `DATABASE_URL`
    /// goes through a transaction-mode pooler; `nil`: LISTEN uses `DATABASE_URL`.
    var listenDatabase: DatabaseURL?
    /// `WORKER_POLL_INTERVAL_MS`: how often an idle pool looks for work without a notification.
    var pollInterval: Duration
    var queue: JobQueue.Configuration
    var metricsHost: String
    var metricsPort: Int
    /// `FORWARD_TARGETS`: where applied Apple notifications are forwarded.
    var forwardTargets: [ForwardTarget]
    /// From `FORWARD_SECRET`; `nil` forwards unsigned.
    var forwardSigner: StandardWebhookSigner?
    /// `FORWARD_SECRET` as given, which the `FORWARD_TARGETS` endpoints sign with.
    var forwardSecret: String?
    var forwardTimeout: Duration
    /// `ENTITLEMENT_LEEWAY_SECONDS`: `is_active` in outgoing events reads as the read API's.
    var entitlementLeewaySeconds: Int
    /// `SANDBOX_ACCESS`, `SANDBOX_USERS`: as ingest's, so `is_active` in announcements reads as the read API's.
    var sandboxAccess: SandboxAccess
    /// `TRANSFER_BEHAVIOR`: what a StoreKit sync does with a purchase linked to another user.
    var transferBehavior: TransferBehavior
    /// `ENDPOINT_DISABLE_AFTER`: an endpoint whose deliveries have failed this long without a success is disabled.
    var endpointDisableAfterSeconds: Double
    /// `CLOCK_SWEEP_INTERVAL_SECONDS`: how often access that ran out by the clock is announced.
    var clockSweepInterval: Duration
    /// `PRUNE_AFTER`: finished queue rows are pruned by `worker run` once this old; `nil`: never.
    var prune: PruneService.Config?
    /// `STRIPE_CHECKOUT_KEY`: the worker cancels unconfirmed web checkouts with it (``CheckoutSweepService``).
    var checkout: CheckoutSettings?
    /// `STRIPE_ACCOUNTS`: the Stripe Connect accounts whose events are applied (to their own state);
    /// events of any other connected account are recorded as ignored.
    var stripeAccounts: Set<String>
    /// Recovery and reconciliation: provider API credentials and their cadence.
    var recovery: RecoverySettings
    /// `CONSUMPTION_RESPONSE` and its policy: Apple's refund requests answered, or `nil` (off).
    var consumption: ConsumptionSettings?
    /// `GOOGLE_PLAY_SERVICE_ACCOUNT_FILE`: the Play Developer API, or `nil` (Play pushes wait).
    var googlePlay: GooglePlayAPISettings? { recovery.play }
    var logLevel: String
    var logFormat: String

    /// The text `worker run --help` shows.
    static let help = HelpText.wrapped("""
        Environment:
          DATABASE_URL              postgres://user:pass@host:port/db[?sslmode=…] (required; sslmode default prefer)
          DATABASE_PASSWORD         the password, when DATABASE_URL has none (as PGPASSWORD; use DATABASE_PASSWORD_FILE)
          DATABASE_TIMEOUT_SECONDS  how long a connection attempt or a probe of the database may take (default 5)
          WORKER_CONCURRENCY        transactions in flight per process, each a database connection (default 16)
          WORKER_BATCH_SIZE         most events applied in one transaction; a lone event is applied at once (default 16; 1: one each)
          WORKER_LISTEN             wake on LISTEN/NOTIFY as events are stored; false polls only, e.g. behind a transaction-mode pooler (default true)
          WORKER_LISTEN_DATABASE_URL a direct connection to PostgreSQL for LISTEN alone, when DATABASE_URL is a transaction-mode pooler (its password, when it has none, is DATABASE_PASSWORD's)
          WORKER_POLL_INTERVAL_MS   how often an idle worker looks for work without a notification (default 1000)
          MAX_ATTEMPTS              attempts before a job is dead-lettered (default 12)
          RETRY_BASE_SECONDS        backoff base, base·2^(attempt−1) with full jitter (default 2)
          RETRY_MAX_SECONDS         backoff cap (default 21600)
          LEASE_SECONDS             how long a dequeued job is owned before another worker may take it (default 60)
          FORWARD_TARGETS           comma-separated http(s) URLs that receive applied Apple notifications (default none)
          FORWARD_SECRET            whsec_<base64 key> signing forwards the Standard Webhooks way (default: unsigned)
          FORWARD_TIMEOUT_SECONDS   per-delivery timeout (default 10)
          ENTITLEMENT_LEEWAY_SECONDS as ingest's: is_active in outgoing events reads as the read API's (default 3600)
          TRANSFER_BEHAVIOR         transfer, transfer_if_inactive or keep: what a StoreKit sync does with a purchase linked to another user (default transfer)
          SANDBOX_ACCESS, SANDBOX_USERS as ingest's: whose sandbox entitlements read active in outgoing events (default anybody)
          ENDPOINT_DISABLE_AFTER    an endpoint failing continuously this long is disabled: 90s, 30m, 12h, 5d (default 5d)
          STRIPE_CHECKOUT_KEY       web checkout's restricted key (as ingest's): checkouts nobody confirmed within ingest's CHECKOUT_WINDOW_SECONDS, and replaced ones, are cancelled at Stripe every CLOCK_SWEEP_INTERVAL_SECONDS
          CLOCK_SWEEP_INTERVAL_SECONDS how often access that ran out with no ending event is announced as entitlement.expired, and the other sweeps run: expiring currency grants, unconfirmed checkouts, Play acknowledgements, consumption answers (default 30)
          PRUNE_AFTER               prune done events and deliveries this old (30m, 12h, 7d), by one worker at a time (default off)
          STRIPE_ACCOUNTS           comma-separated connected accounts (acct_…) whose events are applied, each to its own state (default none: the platform's events only)
          METRICS_HOST              address /metrics, /healthz and /readyz listen on (default 0.0.0.0, for Prometheus in another pod; 127.0.0.1 keeps them on this host)
          METRICS_PORT              port of /metrics, /healthz and /readyz (default 9090)
          LOG_LEVEL, LOG_FORMAT     trace…critical (default info); json or text (default json)
          NAME_FILE                 for DATABASE_URL and every secret: read the value from this file instead (Docker and Kubernetes secrets)
        """) + "\n" + RecoverySettings.help + "\n" + ConsumptionSettings.help + "\n" + HelpText.wrapped(GooglePlayAPISettings.help)

    init(environment: EnvironmentValues) throws {
        database = try DatabaseURL(environment: environment)
        concurrency = try environment.int("WORKER_CONCURRENCY", default: 16, range: 1...1024)
        batchSize = try environment.int("WORKER_BATCH_SIZE", default: 16, range: 1...512)
        listens = try environment.bool("WORKER_LISTEN", default: true)
        if let listenURL = environment.string("WORKER_LISTEN_DATABASE_URL") {
            var url = try DatabaseURL(listenURL, variable: "WORKER_LISTEN_DATABASE_URL")
            if url.password == nil { url.password = database.password }
            listenDatabase = url
        } else {
            listenDatabase = nil
        }
        if listenDatabase != nil, !listens {
            throw ConfigurationError(variable: "WORKER_LISTEN_DATABASE_URL", reason: "is set while WORKER_LISTEN is false: give one of them")
        }
        pollInterval = .milliseconds(try environment.int("WORKER_POLL_INTERVAL_MS", default: 1_000, range: 10...60_000))
        let maxAttempts = try environment.int("MAX_ATTEMPTS", default: 12, range: 1...1000)
        let base = try environment.double("RETRY_BASE_SECONDS", default: 2, range: 0...86_400)
        let cap = try environment.double("RETRY_MAX_SECONDS", default: 21_600, range: 0...2_592_000)
        let lease = try environment.double("LEASE_SECONDS", default: 60, range: 0.5...86_400)
        queue = .init(maxAttempts: maxAttempts, retry: .init(baseSeconds: base, maxSeconds: cap), leaseSeconds: lease)
        metricsHost = environment.string("METRICS_HOST") ?? "0.0.0.0"
        metricsPort = try environment.int("METRICS_PORT", default: 9090, range: 0...65_535)
        forwardTargets = try environment.list("FORWARD_TARGETS").map(ForwardTarget.init)
        forwardSecret = environment.string("FORWARD_SECRET")
        forwardSigner = try forwardSecret.map(StandardWebhookSigner.init(secret:))
        let timeout = try environment.double("FORWARD_TIMEOUT_SECONDS", default: 10, range: 0.1...3_600)
        forwardTimeout = .milliseconds(Int64(timeout * 1000))
        let access = try AccessRules(environment: environment)
        entitlementLeewaySeconds = access.leewaySeconds
        sandboxAccess = access.sandboxAccess
        transferBehavior = try TransferBehavior(environment: environment)
        let disableAfter = environment.string("ENDPOINT_DISABLE_AFTER") ?? "5d"
        guard let disableSeconds = TimeExpression.seconds(disableAfter), disableSeconds >= 1 else {
            throw ConfigurationError(variable: "ENDPOINT_DISABLE_AFTER", reason: "must be a duration such as 90s, 30m, 12h or 5d")
        }
        endpointDisableAfterSeconds = disableSeconds
        prune = try PruneService.Config.configured(by: environment)
        checkout = try CheckoutSettings.configured(by: environment)
        clockSweepInterval = .seconds(try environment.int("CLOCK_SWEEP_INTERVAL_SECONDS", default: 30, range: 1...3_600))
        let accounts = environment.list("STRIPE_ACCOUNTS")
        if let wrong = accounts.first(where: { !$0.hasPrefix("acct_") }) {
            throw ConfigurationError(variable: "STRIPE_ACCOUNTS", reason: "\"\(wrong.prefix(40))\" is not a Stripe account id (acct_…)")
        }
        stripeAccounts = Set(accounts)
        recovery = try RecoverySettings(environment: environment)
        consumption = try ConsumptionSettings.configured(by: environment, appleAPI: recovery.apple != nil)
        (logLevel, logFormat) = try LoggingSetup.validate(environment: environment)
    }
}
