// SPDX-License-Identifier: Apache-2.0
public import Logging
public import PostgresNIO

extension PostgresClient {
    /// Runs `body` in a transaction that commits, or with `dryRun` rolls back, and returns what it
    /// computed either way: the operator commands' `--dry-run`, which does everything but commit.
    public func withTransaction<Result: Sendable>(
        dryRun: Bool, logger: Logger, _ body: @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        do {
            return try await withTransaction(logger: logger) { connection in
                let result = try await body(connection)
                if dryRun { throw RolledBack(result: result) }
                return result
            }
        } catch let error as PostgresTransactionError {
            guard let rolledBack = error.closureError as? RolledBack<Result>, error.rollbackError == nil else { throw error }
            return rolledBack.result
        }
    }
}

/// Thrown to roll a dry run back, carrying what it computed.
private struct RolledBack<Result: Sendable>: Error {
    var result: Result
}
