// SPDX-License-Identifier: Apache-2.0
import PostgresNIO
import Shared

/// A one-line description of an error for `last_error` and the attempt history.
///
/// PostgreSQL errors are redacted by their `description`; this keeps the server's message and
/// SQLSTATE (which never hold bind values) and drops the query text.
enum ErrorText {
    static func describe(_ error: any Error) -> String {
        if let transaction = error as? PostgresTransactionError {
            if let inner = transaction.closureError { return describe(inner) }
            if let inner = transaction.commitError { return "commit failed: " + describe(inner) }
            if let inner = transaction.beginError { return "begin failed: " + describe(inner) }
        }
        if let psql = error as? PSQLError {
            if let message = psql.serverInfo?[.message] {
                return "database error \(psql.serverInfo?[.sqlState] ?? ""): \(message)"
            }
            if !DatabaseProblem.isUnavailability(psql) { return "database error: \(psql.code)" }
        }
        if DatabaseProblem.isUnavailability(error) {
            return "the database cannot be reached: \(DatabaseProblem.sentence(error, timeout: nil))"
        }
        return String(describing: error)
    }
}
