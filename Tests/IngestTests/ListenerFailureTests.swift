// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing
import TestSupport

/// A listener that cannot bind ends the process at once, non-zero, in one line naming the address
/// and its variable — the built binaries, started for real (issue 38). Before, a second ingest on
/// the same admin port logged that it listened, then served nothing and ignored SIGTERM.
@Suite(.timeLimit(.minutes(3)))
struct ListenerFailureTests {
    /// The one line the process ended with, naming the variable and the address.
    static func expectNamed(_ exit: ServiceProcess.Exit, variable: String, address: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!exit.timedOut, "still running after \(exit.elapsed): \(exit.output.suffix(1_500))", sourceLocation: sourceLocation)
        #expect(exit.status != 0, sourceLocation: sourceLocation)
        #expect(exit.elapsed < .seconds(10), "took \(exit.elapsed)", sourceLocation: sourceLocation)
        let line = exit.output.split(separator: "\n").last { $0.contains(variable) }
        #expect(line?.contains("cannot listen on \(address)") == true, "\(exit.output.suffix(1_500))", sourceLocation: sourceLocation)
    }

    @Test func aSecondIngestOnTheSameAdminPortExitsAndTheFirstKeepsServing() async throws {
        try await TestDatabase.with { db in
            let adminPort = try ServiceProcess.freePort()
            let environment = TestCredentials.ingestEnvironment(databaseURL: db.url.urlString, overrides: ["INGEST_ADMIN_PORT": "\(adminPort)"])
            let first = try await ServiceProcess("ingest", environment: environment)
            defer { first.stop() }
            var second = environment
            second["INGEST_PORT"] = "\(try ServiceProcess.freePort())"
            second["INGEST_HOST"] = "127.0.0.1"
            let exit = try await ServiceProcess.runToExit("ingest", environment: second)
            Self.expectNamed(exit, variable: "INGEST_ADMIN_PORT", address: "127.0.0.1:\(adminPort)")

            #expect(first.isRunning)
            let health = try await RawHTTPConnection.exchange(port: first.port, Array("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n".utf8))
            #expect(health?.status == 200)
            let ready = try await RawHTTPConnection.exchange(port: adminPort, Array("GET /readyz HTTP/1.1\r\nHost: t\r\n\r\n".utf8))
            #expect(ready?.status == 200)
        }
    }

    @Test func aTakenPublicPortEndsIngest() async throws {
        try await TestDatabase.with { db in
            let held = try LoopbackListener()
            var environment = TestCredentials.ingestEnvironment(databaseURL: db.url.urlString, overrides: [
                "INGEST_PORT": "\(held.port)", "INGEST_ADMIN_PORT": "\(try ServiceProcess.freePort())"])
            environment["INGEST_HOST"] = "127.0.0.1"
            let exit = try await ServiceProcess.runToExit("ingest", environment: environment)
            Self.expectNamed(exit, variable: "INGEST_PORT", address: "127.0.0.1:\(held.port)")
        }
    }

    @Test func aTakenMetricsPortEndsTheWorker() async throws {
        try await TestDatabase.with { db in
            let held = try LoopbackListener()
            let exit = try await ServiceProcess.runToExit("worker", arguments: ["run"], environment: [
                "DATABASE_URL": db.url.urlString, "METRICS_HOST": "127.0.0.1", "METRICS_PORT": "\(held.port)",
            ])
            Self.expectNamed(exit, variable: "METRICS_PORT", address: "127.0.0.1:\(held.port)")
        }
    }

    @Test func aTakenConsolePortEndsTheConsole() async throws {
        try await TestDatabase.with { db in
            let held = try LoopbackListener()
            let exit = try await ServiceProcess.runToExit("worker", arguments: ["console"], environment: [
                "DATABASE_URL": db.url.urlString, "CONSOLE_PORT": "\(held.port)",
                "OPERATOR_KEYS": "operator_key_for_the_listener_test_0123456789",
            ])
            Self.expectNamed(exit, variable: "CONSOLE_PORT", address: "127.0.0.1:\(held.port)")
        }
    }
}
