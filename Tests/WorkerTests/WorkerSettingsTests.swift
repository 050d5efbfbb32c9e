// SPDX-License-Identifier: Apache-2.0
import Shared
import Testing

@testable import Worker

/// How `worker run` reads `WORKER_LISTEN`, `WORKER_POLL_INTERVAL_MS` and `STRIPE_ACCOUNTS`.
struct WorkerSettingsTests {
    static func settings(_ values: [String: String]) throws -> WorkerSettings {
        try WorkerSettings(environment: EnvironmentValues(values.merging(["DATABASE_URL": "postgres://x@127.0.0.1:1/x"]) { $1 }))
    }

    @Test func byDefaultTheWorkerListensAndPollsEverySecond() throws {
        let settings = try Self.settings([:])
        #expect(settings.listens)
        #expect(settings.pollInterval == .seconds(1))
    }

    @Test(arguments: [("false", false), ("0", false), ("Off", false), ("NO", false), ("true", true), ("yes", true), ("1", true)])
    func listenAcceptsTheUsualSpellings(text: String, expected: Bool) throws {
        #expect(try Self.settings(["WORKER_LISTEN": text]).listens == expected)
    }

    @Test func listenMayHaveAConnectionOfItsOwnWithTheDatabasePassword() throws {
        #expect(try Self.settings([:]).listenDatabase == nil)
        let settings = try Self.settings([
            "DATABASE_URL": "postgres://sluice_worker@pgbouncer:6432/sluice", "DATABASE_PASSWORD": "s3cret",
            "WORKER_LISTEN_DATABASE_URL": "postgres://sluice_worker@db:5432/sluice?sslmode=require",
        ])
        #expect(settings.listens)
        #expect(settings.listenDatabase?.host == "db")
        #expect(settings.listenDatabase?.password == "s3cret")
        #expect(settings.listenDatabase?.sslMode == "require")
        let own = try Self.settings(["WORKER_LISTEN_DATABASE_URL": "postgres://listener:other@db:5432/sluice"])
        #expect(own.listenDatabase?.password == "other")
    }

    /// Listening on a connection of its own while not listening at all: one of them is a mistake.
    @Test func aListenConnectionWithListenOffIsRefused() throws {
        let error = #expect(throws: ConfigurationError.self) {
            try Self.settings(["WORKER_LISTEN_DATABASE_URL": "postgres://db/sluice", "WORKER_LISTEN": "false"])
        }
        #expect(error?.variable == "WORKER_LISTEN_DATABASE_URL")
    }

    @Test func thePollIntervalIsInMilliseconds() throws {
        #expect(try Self.settings(["WORKER_POLL_INTERVAL_MS": "250"]).pollInterval == .milliseconds(250))
    }

    @Test func stripeAccountsAreTheListedConnectAccounts() throws {
        #expect(try Self.settings([:]).stripeAccounts.isEmpty)
        #expect(try Self.settings(["STRIPE_ACCOUNTS": " acct_1, acct_2 ,"]).stripeAccounts == ["acct_1", "acct_2"])
    }

    @Test(arguments: [
        ["WORKER_LISTEN": "maybe"], ["WORKER_POLL_INTERVAL_MS": "5"], ["WORKER_POLL_INTERVAL_MS": "soon"],
        ["STRIPE_ACCOUNTS": "acct_1,cus_2"], ["WORKER_LISTEN_DATABASE_URL": "mysql://db/sluice"],
    ])
    func aBadValueIsRefusedNamingItsVariable(setting: [String: String]) throws {
        let error = #expect(throws: ConfigurationError.self) { try Self.settings(setting) }
        #expect(error?.variable == setting.keys.first)
    }
}
