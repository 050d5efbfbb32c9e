// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import Shared
import Testing
import TestSupport

/// `sslmode` as libpq users expect it, against the throwaway PostgreSQL that scripts/postgres.sh
/// starts with TLS and a test CA (its certificate names `localhost` only).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["SLUICE_TEST_PG_CA"] != nil, "needs scripts/postgres.sh's TLS PostgreSQL"),
       .timeLimit(.minutes(3)))
struct DatabaseTLSTests {
    static let ca = ProcessInfo.processInfo.environment["SLUICE_TEST_PG_CA"] ?? ""
    static let otherCA = ProcessInfo.processInfo.environment["SLUICE_TEST_PG_OTHER_CA"] ?? ""

    /// Connects with `query` on `host` and answers whether the session is encrypted; throws when it
    /// cannot connect.
    static func encrypted(host: String, _ query: String) async throws -> Bool {
        let server = try TestDatabase.serverURL()
        let url = try DatabaseURL("postgres://postgres@\(host):\(server.port)/postgres?\(query)")
        let client = PostgresClient(configuration: try url.clientConfiguration(maximumConnections: 1), backgroundLogger: TestDatabase.logger)
        return try await withThrowingTaskGroup(of: Bool?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await withTimeout(.seconds(8)) {
                for try await ssl in try await client.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: TestDatabase.logger)
                    .decode(Bool.self) {
                    return ssl
                }
                return false
            }
        }
    }

    @Test(arguments: [
        ("127.0.0.1", "sslmode=disable", false),
        // No sslmode is libpq's default, prefer: encrypted when the server offers it.
        ("127.0.0.1", "", true),
        ("127.0.0.1", "sslmode=prefer", true),
        ("127.0.0.1", "sslmode=require", true),
        ("127.0.0.1", "sslmode=verify-ca&sslrootcert=\(ca)", true),
        ("localhost", "sslmode=verify-full&sslrootcert=\(ca)", true),
        ("127.0.0.1", "sslmode=require&sslrootcert=\(ca)", true),
    ])
    func theseModesConnect(host: String, query: String, encrypted: Bool) async throws {
        #expect(try await Self.encrypted(host: host, query) == encrypted)
    }

    @Test(arguments: [
        // The certificate is for localhost, not for this address.
        ("127.0.0.1", "sslmode=verify-full&sslrootcert=\(ca)"),
        // Another CA signed nothing this server shows.
        ("localhost", "sslmode=verify-full&sslrootcert=\(otherCA)"),
        ("127.0.0.1", "sslmode=verify-ca&sslrootcert=\(otherCA)"),
        // A private CA is not among the system's roots.
        ("localhost", "sslmode=verify-full"),
    ])
    func theseModesRefuseTheServer(host: String, query: String) async throws {
        await #expect(throws: (any Error).self) { try await Self.encrypted(host: host, query) }
    }

    @Test func anUnreadableRootFileIsAConfigurationError() throws {
        let error = #expect(throws: ConfigurationError.self) {
            try DatabaseURL("postgres://u@db:5432/x?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem")
        }
        #expect(error?.variable == "DATABASE_URL")
    }
}
