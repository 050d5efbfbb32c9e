// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import Logging
import Shared
import NIOCore

/// What `worker recover` and `worker reconcile` need: the operator session, the recovery settings
/// (`STRIPE_ACCOUNTS` too) and an HTTP client.
enum RecoverySession {
    static let help = OperatorSession.help + "\n" + RecoverySettings.help + "\n" + HelpText.wrapped("""
          STRIPE_ACCOUNTS           connected accounts (acct_…) whose events are recovered too
        """) + "\n" + HelpText.wrapped(GooglePlayAPISettings.help)

    static func with<Result: Sendable>(_ body: @Sendable @escaping (Recovery, Logger) async throws -> Result) async throws -> Result {
        let environment = try EnvironmentValues.process()
        let settings = try RecoverySettings(environment: environment)
        let accounts = Set(environment.list("STRIPE_ACCOUNTS"))
        return try await OperatorSession.with { client, logger in
            try await HTTPClient.withHTTPClient(configuration: .init(timeout: .init(connect: .seconds(5)))) { http in
                let recovery = Recovery(settings: settings, stripeAccounts: accounts, http: http, client: client, metrics: nil, logger: logger)
                return try await body(recovery, logger)
            }
        }
    }
}
