// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Ingest

/// `POST /v1/iap/users/{user_id}/balance-transactions`, `GET …/balances` and the ledger, through
/// the real application and PostgreSQL (docs/credits.md).
@Suite(.timeLimit(.minutes(3)))
struct BalanceAPITests {
    static let key: HTTPFields = [.authorization: "Bearer \(IngestHarness.apiKey)", .contentType: "application/json"]

    static func post(
        _ client: any TestClientProtocol, user: String = "user_b", key idempotencyKey: String?, _ body: String
    ) async throws -> TestResponse {
        var headers = key
        if let idempotencyKey { headers[HTTPField.Name("Idempotency-Key")!] = idempotencyKey }
        return try await client.execute(
            uri: "/v1/iap/users/\(user)/balance-transactions", method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    static func balances(_ client: any TestClientProtocol, user: String = "user_b") async throws -> [String: Int64] {
        let response = try await client.execute(uri: "/v1/iap/users/\(user)/balances", method: .get, headers: key)
        #expect(response.status == .ok)
        struct Answer: Decodable { var user_id: String; var balances: [String: Int64] }
        return try JSONDecoder().decode(Answer.self, from: response.body).balances
    }

    struct Row: Decodable, Equatable {
        var id: String
        var user_id: String
        var adjustments: [String: Int64]
        var applied: [String: Int64]
        var balances: [String: Int64]
        var shortfall: [String: Int64]?
        var cause: String
        var reason: String?
        var metadata: [String: String]?
        var created_at: String
    }

    @Test func aDepositThenASpendMoveEveryCurrencyAndTheLedgerKeepsBoth() async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            let deposit = try await Self.post(client, key: "dep-1", #"{"adjustments": {"credits": 500, "gems": 3}, "reason": "welcome"}"#)
            #expect(deposit.status == .ok, "\(deposit.text)")
            let first = try JSONDecoder().decode(Row.self, from: deposit.body)
            #expect(first.balances == ["credits": 500, "gems": 3] && first.cause == "api" && first.reason == "welcome")
            let spend = try await Self.post(
                client, key: "spend-1", #"{"adjustments": {"credits": -20, "gems": -1}, "metadata": {"request": "r_1"}}"#)
            #expect(spend.status == .ok, "\(spend.text)")
            let second = try JSONDecoder().decode(Row.self, from: spend.body)
            #expect(second.applied == ["credits": -20, "gems": -1] && second.balances == ["credits": 480, "gems": 2])
            #expect(second.metadata == ["request": "r_1"] && second.shortfall == nil)
            #expect(try await Self.balances(client) == ["credits": 480, "gems": 2])
            #expect(try await Self.balances(client, user: "someone_else") == [:])

            let history = try await client.execute(uri: "/v1/iap/users/user_b/balance-transactions?limit=1", method: .get, headers: Self.key)
            struct Page: Decodable { var balance_transactions: [Row] }
            let page = try JSONDecoder().decode(Page.self, from: history.body).balance_transactions
            #expect(page == [second], "newest first")
            let next = try await client.execute(
                uri: "/v1/iap/users/user_b/balance-transactions?limit=1&starting_after=\(second.id)", method: .get, headers: Self.key)
            #expect(try JSONDecoder().decode(Page.self, from: next.body).balance_transactions == [first])
            let foreign = try await client.execute(
                uri: "/v1/iap/users/someone_else/balance-transactions?starting_after=\(second.id)", method: .get, headers: Self.key)
            #expect(foreign.status == .badRequest && foreign.errorCode == "invalid_cursor", "another user's row is no cursor")
        }
    }

    @Test func theSameKeyAndBodyReplayTheFirstAnswerAndAnotherBodyIsRefused() async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            _ = try await Self.post(client, key: "seed", #"{"adjustments": {"credits": 100}}"#)
            let body = #"{"adjustments": {"credits": -30}, "reason": "image"}"#
            let first = try await Self.post(client, key: "req-7", body)
            let again = try await Self.post(client, key: "req-7", #"{"reason": "image", "adjustments": {"credits": -30}}"#)
            #expect(first.status == .ok && again.status == .ok)
            #expect(again.headers[HTTPField.Name("Idempotent-Replayed")!] == "true" && first.headers[HTTPField.Name("Idempotent-Replayed")!] == nil)
            #expect(try JSONDecoder().decode(Row.self, from: again.body) == JSONDecoder().decode(Row.self, from: first.body))
            let other = try await Self.post(client, key: "req-7", #"{"adjustments": {"credits": -31}, "reason": "image"}"#)
            #expect(other.status == .badRequest && other.errorCode == "idempotency_key_reused")
            #expect(try await Self.balances(client) == ["credits": 70], "spent once")
            let elsewhere = try await Self.post(client, user: "user_c", key: "req-7", #"{"adjustments": {"credits": 5}}"#)
            #expect(elsewhere.status == .ok, "a key is the user's own")
        }
    }

    @Test func aBalanceTooLowRefusesTheWholeChange() async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            _ = try await Self.post(client, key: "seed", #"{"adjustments": {"credits": 100, "gems": 1}}"#)
            let short = try await Self.post(client, key: "big", #"{"adjustments": {"credits": -10, "gems": -2}}"#)
            #expect(short.status == .conflict && short.errorCode == "insufficient_balance", "\(short.text)")
            #expect(short.text.contains("gems (balance 1)"))
            #expect(try await Self.balances(client) == ["credits": 100, "gems": 1], "credits did not move either")
            let unknown = try await Self.post(client, key: "never", #"{"adjustments": {"tokens": -1}}"#)
            #expect(unknown.status == .conflict, "a currency never held is a balance of 0")
            let retried = try await Self.post(client, key: "big", #"{"adjustments": {"credits": -10, "gems": -1}}"#)
            #expect(retried.status == .ok, "a refusal is not kept under its key")
        }
    }

    @Test(arguments: [
        (#"{"adjustments": {}}"#, "invalid_adjustments"), (#"{"adjustments": {"credits": 0}}"#, "invalid_adjustments"),
        (#"{"adjustments": {"Credits": 1}}"#, "invalid_adjustments"), (#"{"adjustments": {"credits": 1.5}}"#, "malformed"),
        (#"{"adjustments": {"credits": 1000000000001}}"#, "invalid_adjustments"), (#"not json"#, "malformed"),
        (#"{"adjustments": {"credits": 1}, "metadata": {"k": 1}}"#, "malformed"),
    ])
    func aBadBodyIs400AndChangesNothing(body: String, code: String) async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            let response = try await Self.post(client, key: "k", body)
            #expect(response.status == .badRequest && response.errorCode == code, "\(body): \(response.text)")
            #expect(try await Self.balances(client) == [:])
        }
    }

    /// The attack: a deposit under the key of a grant Sluice is about to make (or has made) for
    /// this user would stop that grant, or have its take-back find the API's row. Every prefix
    /// of Sluice's own keys is refused, and nothing is stored.
    @Test(arguments: CurrencyGrantDecision.reservedKeyPrefixes)
    func aKeyOfSluicesOwnGrantsIsRefused(prefix: String) async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            let response = try await Self.post(client, key: prefix + "transaction:web_checkout:production:pi_1", #"{"adjustments": {"credits": 5}}"#)
            #expect(response.status == .badRequest && response.errorCode == "reserved_idempotency_key", "\(response.text)")
            #expect(try await Self.balances(client) == [:])
        }
    }

    @Test func withoutAnIdempotencyKeyOrWithAClientKeyNothingIsSpent() async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            let unkeyed = try await Self.post(client, key: nil, #"{"adjustments": {"credits": 5}}"#)
            #expect(unkeyed.status == .badRequest && unkeyed.errorCode == "missing_idempotency_key")
            let clientKey: HTTPFields = [
                .authorization: "Bearer \(TestCredentials.clientAPIKey)", HTTPField.Name("Idempotency-Key")!: "c",
            ]
            for (uri, method) in [
                ("/v1/iap/users/user_b/balance-transactions", HTTPRequest.Method.post), ("/v1/iap/users/user_b/balances", .get),
                ("/v1/iap/users/user_b/balance-transactions", .get),
            ] {
                let response = try await client.execute(
                    uri: uri, method: method, headers: clientKey, body: ByteBuffer(string: #"{"adjustments": {"credits": 5}}"#))
                #expect(response.status == .forbidden, "\(method) \(uri)")
            }
            #expect(try await Self.balances(client) == [:])
        }
    }

    /// 200 spends of 1 at once against a balance of 100, over two ingest applications on one
    /// database and real sockets: exactly 100 succeed and the balance ends at 0.
    @Test func concurrentSpendsNeverDriveABalanceBelowZero() async throws {
        try await TestDatabase.with { db in
            // The 200 spends take the user's lock one after another: on a loaded machine (CI
            // starts a hundred suites at once on two cores) the last can wait past the product's
            // 5 s DATABASE_TIMEOUT_SECONDS and be answered 503 (made or not, a retry with its key
            // would tell), which is load, not what this test checks.
            let settings = try IngestSettings(environment: EnvironmentValues(
                IngestHarness.environment(database: db.url, overrides: ["DATABASE_TIMEOUT_SECONDS": "60"])))
            let first = try buildApplication(settings: settings, logger: TestDatabase.logger)
            let second = try buildApplication(settings: settings, logger: TestDatabase.logger)
            try await first.test(.live) { one in
                try await second.test(.live) { two in
                    #expect(try await Self.post(one, key: "seed", #"{"adjustments": {"credits": 100}}"#).status == .ok)
                    let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                        for index in 0..<200 {
                            let client = index.isMultiple(of: 2) ? one : two
                            group.addTask { try await Self.post(client, key: "spend-\(index)", #"{"adjustments": {"credits": -1}}"#).status }
                        }
                        return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
                    }
                    #expect(statuses.filter { $0 == .ok }.count == 100)
                    #expect(statuses.filter { $0 == .conflict }.count == 100)
                    #expect(try await Self.balances(one) == ["credits": 0])
                    let rows = try await db.client.query("SELECT count(*)::int FROM balance_transactions", logger: TestDatabase.logger)
                    for try await count in rows.decode(Int.self) { #expect(count == 101) }
                }
            }
        }
    }
}
