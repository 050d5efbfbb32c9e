// SPDX-License-Identifier: Apache-2.0
public import Logging
public import PostgresNIO

/// What `/readyz` of both processes reports: whether the database answers `SELECT 1` in time.
/// Liveness (`/healthz`) never asks the database: a database outage must not restart processes
/// that reconnect by themselves.
public struct DatabaseReadiness: Sendable {
    let client: PostgresClient
    let timeout: Duration

    public init(client: PostgresClient, timeout: Duration = .seconds(2)) {
        self.client = client
        self.timeout = timeout
    }

    /// `true` when the database answered; logs why not otherwise.
    public func check(logger: Logger) async -> Bool {
        let client = self.client
        do {
            _ = try await withTimeout(timeout) { try await client.query("SELECT 1", logger: logger) }
            return true
        } catch {
            logger.warning("not ready: the database does not answer", metadata: ["error": "\(String(reflecting: error))"])
            return false
        }
    }
}
