// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import NIOCore
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// User ids with control characters (issue 37, finding 5), sent for real: refused at ingest's door
/// with `400`, never applied from a Stripe object's metadata, and escaped when the CLI prints what
/// was stored before.
@Suite(.timeLimit(.minutes(3)))
struct ControlCharacterTests {
    /// One request on its own connection to an `ingest` process.
    static func send(_ port: Int, _ method: String, _ path: String, key: String = TestCredentials.apiKey, body: Data = Data()) async throws -> (Int, String) {
        let head = "\(method) \(path) HTTP/1.1\r\nHost: sluice\r\nContent-Length: \(body.count)\r\nConnection: close\r\nAuthorization: Bearer \(key)\r\n\r\n"
        let response = try #require(try await RawHTTPConnection.exchange(port: port, Array(head.utf8) + Array(body)))
        return (response.status, response.body)
    }

    @Test func idsWithControlCharactersAreRefusedAtTheDoor() async throws {
        try await TestDatabase.with { db in
            let ingest = try await ServiceProcess(
                "ingest", environment: TestCredentials.ingestEnvironment(databaseURL: db.url.urlString, overrides: ["LOG_LEVEL": "error"]))
            defer { ingest.stop() }
            let transaction = try TestCredentials.signer.sign(subscription("5500001", user: nil))
            for user in ["abc\u{0}", "\u{1B}]0;owned\u{7}", "tab\there", "c1\u{85}"] {
                let sync = try JSONEncoder().encode(["signed_transaction": transaction, "user_id": user])
                let answer = try await Self.send(ingest.port, "POST", "/v1/iap/storekit-transactions", body: sync)
                #expect(answer.0 == 400 && answer.1.contains("control characters"), "sync \(user.debugDescription): \(answer)")
            }
            let token = Data(#"{"app_account_token":"\#(UUID().uuidString)"}"#.utf8)
            for segment in ["abc%1B%5B31m", "nul%00", "bell%07"] {
                let answer = try await Self.send(ingest.port, "PUT", "/v1/iap/users/\(segment)/app-account-token", body: token)
                #expect(answer.0 == 400 && answer.1.contains("control characters"), "registration \(segment): \(answer)")
            }
            for path in [
                "/v1/iap/entitlements?user_id=abc%00", "/v1/iap/entitlements?user_id=abc%1B", "/v1/iap/transaction-history?user_id=abc%00",
                "/v1/iap/entitlements?email=a%00%40example.com",
            ] {
                let answer = try await Self.send(ingest.port, "GET", path)
                #expect(answer.0 == 400, "\(path): \(answer)")
            }
            #expect(try await db.scalar("SELECT count(*) FROM events") == 0, "nothing refused was stored")
            // A percent-encoded segment is the id it encodes.
            let registered = try await Self.send(ingest.port, "PUT", "/v1/iap/users/user%40example.com/app-account-token", body: token)
            #expect(registered.0 == 201 && registered.1.contains(#""user_id":"user@example.com""#), "\(registered)")
            #expect(try await db.strings("SELECT user_id FROM app_account_tokens") == ["user@example.com"])
            #expect(!ingest.log().contains("\u{1B}"), "no control character reached the log")
        }
    }

    @Test func aStripeMetadataIdWithAControlCharacterIsNoUserAndTheCLIEscapesWhatWasStored() async throws {
        try await SystemHarness.run { system in
            let evil = "evil\u{1B}]8;;https://attacker.example\u{7}link"
            try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_evil", user: evil))
            try await system.drain()
            #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE user_id LIKE 'evil%'") == 0)
            let states = try await system.db.strings("SELECT state || ': ' || coalesce(last_error, '') FROM events")
            #expect(states == ["done: "], "recorded, not dead-lettered: \(states)")

            // An id stored before the rule: the CLI shows it escaped, never as a terminal sequence.
            try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_old", user: "old_user"))
            try await system.drain()
            try await system.db.client.query(
                "UPDATE entitlements SET user_id = \(evil) WHERE user_id = 'old_user'", logger: TestDatabase.logger)
            try await system.db.client.query(
                "UPDATE transactions SET user_id = \(evil) WHERE user_id = 'old_user'", logger: TestDatabase.logger)
            let shown = try await ServiceProcess.runToExit(
                "worker", arguments: ["customer", evil], environment: ["DATABASE_URL": system.db.url.urlString, "LOG_LEVEL": "error"])
            #expect(shown.status == 0, "\(shown.output)")
            #expect(!shown.output.contains("\u{1B}") && shown.output.contains(#"evil\u{1B}]8;;https://attacker.example\u{7}link"#), "\(shown.output)")
        }
    }
}
