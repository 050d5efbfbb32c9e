// SPDX-License-Identifier: Apache-2.0
import HTTPTypes
import Shared

/// A request's calls to the database, each bounded by `DATABASE_TIMEOUT_SECONDS`: past it, or
/// when no connection can be made, the request is answered `503` with a JSON error saying why
/// (issue 38: the read API used to hang 30 s and more with the database unreachable).
///
/// The webhooks' stores are bounded by the group commit's own timeout (`storeTimeout`).
struct DatabaseCalls: Sendable {
    let limit: Duration

    func run<Result: Sendable>(_ body: @Sendable @escaping () async throws -> Result) async throws -> Result {
        do {
            return try await withTimeout(limit, body)
        } catch {
            guard DatabaseProblem.isUnavailability(error) else { throw error }
            throw APIError.databaseUnavailable(error, limit: limit)
        }
    }
}

extension APIError {
    /// `503 database_unavailable`, with why in words.
    static func databaseUnavailable(_ error: any Error, limit: Duration) -> APIError {
        APIError(
            .serviceUnavailable, code: "database_unavailable",
            message: "the database cannot be reached: \(DatabaseProblem.sentence(error, timeout: limit))", headers: [.retryAfter: "5"])
    }
}
