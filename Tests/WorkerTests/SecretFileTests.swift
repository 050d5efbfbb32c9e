// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing
import TestSupport

/// Secrets from files: `NAME_FILE`, the Docker and Kubernetes secrets convention.
@Suite(.timeLimit(.minutes(3)))
struct SecretFileTests {
    static func file(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func everySecretMayComeFromAFile() throws {
        let environment = try EnvironmentValues.process([
            "DATABASE_URL_FILE": try Self.file("postgres://u:p@db:5432/x\n"), "API_KEYS_FILE": try Self.file("k1,k2\n"), "LOG_LEVEL": "info",
            // A forward target's URL may hold a token (Slack-style).
            "FORWARD_TARGETS_FILE": try Self.file("https://hooks.example.com/services/T0/B0/token\n"),
        ])
        #expect(environment.list("FORWARD_TARGETS") == ["https://hooks.example.com/services/T0/B0/token"])
        #expect(environment.string("DATABASE_URL") == "postgres://u:p@db:5432/x")
        #expect(environment.list("API_KEYS") == ["k1", "k2"])
        #expect(environment.string("LOG_LEVEL") == "info")
    }

    /// The URL in plain configuration, the password in a file (compose.yaml's way).
    @Test func theDatabasePasswordMayComeApartFromTheURL() throws {
        let environment = try EnvironmentValues.process([
            "DATABASE_URL": "postgres://sluice_ingest@db:5432/sluice", "DATABASE_PASSWORD_FILE": try Self.file("p@ss:w/rd\n"),
        ])
        let url = try DatabaseURL(environment: environment)
        #expect(url.username == "sluice_ingest" && url.password == "p@ss:w/rd")
        #expect(try DatabaseURL(environment: EnvironmentValues(["DATABASE_URL": "postgres://u:inline@db/x"])).password == "inline")
        let both = #expect(throws: ConfigurationError.self) {
            try DatabaseURL(environment: EnvironmentValues(["DATABASE_URL": "postgres://u:inline@db/x", "DATABASE_PASSWORD": "other"]))
        }
        #expect(both?.variable == "DATABASE_PASSWORD")
        #expect(both?.description.contains("inline") == false && both?.description.contains("other") == false)
    }

    @Test func bothOrAnUnreadableFileIsAnErrorNamingTheVariable() throws {
        let both = #expect(throws: ConfigurationError.self) {
            try EnvironmentValues.process(["FORWARD_SECRET": "x", "FORWARD_SECRET_FILE": try Self.file("y")])
        }
        #expect(both?.variable == "FORWARD_SECRET_FILE")
        let missing = #expect(throws: ConfigurationError.self) {
            try EnvironmentValues.process(["STRIPE_API_KEY_FILE": "/nonexistent/stripe-key"])
        }
        #expect(missing?.variable == "STRIPE_API_KEY_FILE")
    }

    @Test func theWorkerReadsItsDatabaseURLFromAFile() async throws {
        try await TestDatabase.with { db in
            let result = try await CommandLineTests.runSeparately(
                "worker", ["stats", "--json"], environment: ["DATABASE_URL_FILE": try Self.file(db.url.urlString + "\n"), "LOG_LEVEL": "error"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("\"queues\""))
        }
    }
}
