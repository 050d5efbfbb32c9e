// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import Shared

/// What every operator command needs: `DATABASE_URL`, the log settings, and a short-lived client.
enum OperatorSession {
    /// The environment text the operator commands' `--help` shows.
    static let help = HelpText.wrapped("""
        Environment:
          DATABASE_URL              postgres://user:pass@host:port/db[?sslmode=…] (required)
          DATABASE_TIMEOUT_SECONDS  how long the command waits for the database before it fails saying why (default 5)
          LOG_LEVEL, LOG_FORMAT     trace…critical (default info); json or text (default json); logs go to stderr
        """)

    static func with<Result: Sendable>(
        _ body: @Sendable @escaping (PostgresClient, Logger) async throws -> Result
    ) async throws -> Result {
        let environment = try EnvironmentValues.process()
        let database = try DatabaseURL(environment: environment)
        let (level, format) = try LoggingSetup.validate(environment: environment)
        LoggingSetup.bootstrap(level: level, format: format)
        let logger = Logger(label: "worker.operator")
        return try await DatabaseSession.with(database, logger: logger) { client in try await body(client, logger) }
    }

    /// Prints a command's output for a terminal, its control characters escaped
    /// (``TerminalText``): what it shows came from the database or a provider.
    static func show(_ text: String) {
        print(TerminalText.escaped(text))
    }

    /// Writes `value` as JSON with RFC 3339 times, keys sorted, on one line.
    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return TerminalText.escapedJSON(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}
