// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// With its database stopped, a console page answers within `DATABASE_TIMEOUT_SECONDS` with a page
/// that says the database cannot be reached, not an empty `500` (issue 38).
@Suite(.timeLimit(.minutes(1)))
struct ConsoleDatabaseErrorTests {
    /// Far above the 1 s limit, far below the suite's minute: a page that waited on the database
    /// with no limit would not answer before the suite is stopped.
    static let notHung: Duration = .seconds(25)

    @Test func aPageThatNeedsTheDatabaseSaysItCannotBeReached() async throws {
        // Port 1: nothing listens there (a freed port could be handed to another test's listener).
        let url = try DatabaseURL("postgres://sluice@127.0.0.1:1/sluice")
        let client = try url.makeClient(maximumConnections: 2, logger: TestDatabase.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let services = ConsoleServices(
                client: client, logger: TestDatabase.logger, leeway: 3_600, sandboxAccess: .anybody,
                eventProof: nil, rebuilder: EntityRebuilder(client: client, handlers: [:], proof: nil, logger: TestDatabase.logger), reconciler: nil)
            let keys = try OperatorKeys([ConsoleHarness.key])
            let router = try ConsoleApplication.router(services: services, keys: keys, readOnly: false, databaseTimeout: .seconds(1))
            try await Application(router: router).test(.router) { client in
                // Signing in records the session: with the database gone, it says so, in time.
                var started = ContinuousClock.now
                let signIn = try await ConsoleHarness(client: client, cookie: nil).post("/login", ["key": ConsoleHarness.key])
                // Not hung (the answer names the 1 s limit or the refusal, below); the bound is loose
                // because other suites' blocking waits may hold the test's threads on a busy machine
                // (11.4 s was seen with 10).
                #expect(ContinuousClock.now - started < Self.notHung)
                #expect(signIn.status == .serviceUnavailable && String(buffer: signIn.body).contains("The database cannot be reached"))
                // A session's cookie from before the database went away: checking it needs the database.
                let cookie = ConsoleSessionToken.issue(keyIndex: 0, keys: keys, now: Date()).cookie
                let console = ConsoleHarness(client: client, cookie: "\(OperatorAuthMiddleware.cookieName)=\(cookie)")
                started = ContinuousClock.now
                let response = try await console.get("/")
                #expect(ContinuousClock.now - started < Self.notHung)
                #expect(response.status == .serviceUnavailable)
                let page = String(buffer: response.body)
                #expect(page.contains("The database cannot be reached"), "\(page)")
                #expect(page.contains("connection refused") || page.contains("no answer within 1 s"), "\(page)")
            }
        }
    }
}
