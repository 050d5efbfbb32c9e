// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import Shared
import Testing
import TestSupport

/// Every listener closes a connection left idle (issue 37, finding 7; `IdleConnections`): one
/// that kept them open could be made to hold every file descriptor by anyone who can connect.
/// Against the built `ingest` (API and admin ports) and `worker run` (metrics port).
///
/// The limit leaves room for starting both processes while the rest of the suite runs beside
/// it: 50 s of it is the test's own patience, and the start-up alone took over 70 s under a
/// full parallel run on two cores (a run of 103 s, and one past the old limit of two minutes).
@Suite(.timeLimit(.minutes(4)))
struct IdleConnectionTests {
    @Test func everyListenerClosesAConnectionLeftIdle() async throws {
        try await TestDatabase.with { db in
            let adminPort = try ServiceProcess.freePort()
            let ingest = try await ServiceProcess(
                "ingest",
                environment: TestCredentials.ingestEnvironment(
                    databaseURL: db.url.urlString, overrides: ["INGEST_ADMIN_PORT": "\(adminPort)", "LOG_LEVEL": "error"]))
            defer { ingest.stop() }
            let worker = try await ServiceProcess("worker", arguments: ["run"], environment: ["DATABASE_URL": db.url.urlString, "LOG_LEVEL": "error"])
            defer { worker.stop() }
            // Well past the 30 s of IdleConnections.timeout: a read that gets no end of file by then times out.
            let patience = IdleConnections.timeout.nanoseconds / 1_000_000_000 + 20
            try await withThrowingTaskGroup(of: (String, Bool).self) { group in
                for (name, port) in [("ingest's API port", ingest.port), ("ingest's admin port", adminPort), ("the worker's metrics port", worker.port)] {
                    group.addTask {
                        let connection = try await RawHTTPConnection(port: port, timeout: .seconds(patience))
                        return (name, await connection.isClosedByServer())
                    }
                }
                for try await (name, closed) in group {
                    #expect(closed, "\(name) kept a connection that sent nothing open for \(patience) s")
                }
            }
        }
    }
}
