// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// `worker console`'s configuration, from the environment (and `--read-only`).
struct ConsoleSettings: Sendable {
    static let help = HelpText.wrapped("""
        Environment:
          DATABASE_URL              postgres://user:pass@host:port/db[?sslmode=…] (required)
          OPERATOR_KEYS             the console's keys, comma-separated, each ≥ 32 characters (required; or OPERATOR_KEYS_FILE)
          CONSOLE_HOST              address to listen on (default 127.0.0.1: not reachable from other hosts)
          CONSOLE_PORT              port (default 8090)
          CONSOLE_READ_ONLY         true: pages only, every action refused (same as --read-only)
          DATABASE_TIMEOUT_SECONDS  how long a page waits for the database before it says it cannot be reached (default 5)
          ENTITLEMENT_LEEWAY_SECONDS, SANDBOX_ACCESS, SANDBOX_USERS
                                    as in worker run, for is_active
          STRIPE_ACCOUNTS, TRANSFER_BEHAVIOR
                                    as in worker run, for rebuilds
          EVENT_SIGNING_KEY         as in worker run: a rebuild applies only stored events with a valid proof, and appAccountToken registrations count as the worker's do
          App Store Server API and STRIPE_API_KEY variables
                                    as in worker run, for "reconcile now"
          LOG_LEVEL, LOG_FORMAT     trace…critical (default info); json or text (default json); logs go to stderr

        The session cookie (__Host-sluice_console) is Secure: serve the console over HTTPS (a TLS proxy), or reach it as localhost / 127.0.0.1, which browsers treat as secure. Sessions are kept in the database: signing out ends one for every console replica; 30 minutes without a request, or 12 hours, end it.
        """)

    var database: DatabaseURL
    var keys: OperatorKeys
    var host: String
    var port: Int
    var readOnly: Bool
    var leeway: TimeInterval
    var sandboxAccess: SandboxAccess
    var transferBehavior: TransferBehavior
    var stripeAccounts: Set<String>
    var recovery: RecoverySettings
    var logLevel: String
    var logFormat: String

    init(environment: EnvironmentValues, readOnly: Bool = false) throws {
        database = try DatabaseURL(environment: environment)
        keys = try OperatorKeys(environment: environment)
        host = environment.string("CONSOLE_HOST") ?? "127.0.0.1"
        port = try environment.int("CONSOLE_PORT", default: 8090, range: 1...65_535)
        self.readOnly = try readOnly || environment.bool("CONSOLE_READ_ONLY", default: false)
        let access = try AccessRules(environment: environment)
        leeway = access.leeway
        sandboxAccess = access.sandboxAccess
        transferBehavior = try TransferBehavior(environment: environment)
        stripeAccounts = Set(environment.list("STRIPE_ACCOUNTS"))
        recovery = try RecoverySettings(environment: environment)
        (logLevel, logFormat) = try LoggingSetup.validate(environment: environment)
    }
}
