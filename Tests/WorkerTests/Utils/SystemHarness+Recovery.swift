// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Shared
import TestSupport

@testable import Worker

extension SystemHarness {
    /// Runs `body` with the whole system and the worker's recovery, both configured with
    /// `environment` (the stand-ins' variables), as `worker run` builds them.
    static func withRecovery(
        _ environment: [String: String], _ body: @Sendable @escaping (SystemHarness, Recovery) async throws -> Void
    ) async throws {
        try await run(worker: environment) { system in
            try await HTTPClient.withHTTPClient { http in
                let settings = try RecoverySettings(environment: EnvironmentValues(environment))
                let recovery = Recovery(
                    settings: settings, stripeAccounts: [], http: http, client: system.db.client, metrics: system.metrics,
                    logger: TestDatabase.logger)
                try await body(system, recovery)
            }
        }
    }
}
