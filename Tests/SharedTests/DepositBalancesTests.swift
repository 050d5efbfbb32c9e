// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport

/// `sluice_deposit_balances` (sql/functions): many deposits in one statement, as the grants of a
/// batch of applied events are made, against the same deposits made one call at a time, as
/// `sluice_adjust_balances` makes each.
@Suite(.timeLimit(.minutes(3)))
struct DepositBalancesTests {
    /// One deposit of a call: what `sluice_write_applied_batch` sends for a grant.
    struct Deposit: Encodable {
        var user_id: String
        var adjustments: [String: Int64]
        var cause = "purchase"
        var idempotency_key: String?
        var expires_at: String?
        var actor: String?
    }

    /// The ledger as the tests compare it: each row's user, key and balances after, in order.
    struct LedgerRow: Equatable, CustomStringConvertible {
        var user: String
        var key: String?
        var balances: String
        var description: String { "\(user) \(key ?? "-") \(balances)" }
    }

    @Test func manyDepositsInOneCallAreMadeInOrderOnceEach() async throws {
        try await TestDatabase.with { db in
            let store = BalanceStore(client: db.client, logger: TestDatabase.logger)
            _ = try await store.adjust(user: "a", try BalanceAdjustments(["credits": 10]), cause: .purchase, key: "k0", digest: nil)
            let made = try await Self.deposit([
                Deposit(user_id: "a", adjustments: ["credits": 5], idempotency_key: "k1"),
                Deposit(user_id: "b", adjustments: ["credits": 7], idempotency_key: "k1"),
                Deposit(user_id: "a", adjustments: ["credits": 100], idempotency_key: "k0"),
                Deposit(user_id: "a", adjustments: ["credits": 5], idempotency_key: "k1"),
                Deposit(user_id: "a", adjustments: ["credits": 3, "gems": 1], idempotency_key: "k2", expires_at: "2031-01-01T00:00:00Z"),
                Deposit(user_id: "a", adjustments: ["credits": 2], cause: "operator", actor: "support"),
            ], on: db.client)
            #expect(made == 4, "a key the ledger has, or the call had before, is not made again")
            #expect(try await Self.ledger(db.client) == [
                LedgerRow(user: "a", key: "k0", balances: #"{"credits": 10}"#),
                LedgerRow(user: "a", key: "k1", balances: #"{"credits": 15}"#),
                LedgerRow(user: "b", key: "k1", balances: #"{"credits": 7}"#),
                LedgerRow(user: "a", key: "k2", balances: #"{"gems": 1, "credits": 18}"#),
                LedgerRow(user: "a", key: nil, balances: #"{"credits": 20}"#),
            ])
            #expect(try await store.balances(user: "a") == ["credits": 20, "gems": 1])
            #expect(try await store.balances(user: "b") == ["credits": 7])
            var lots: [String] = []
            for try await (currency, remaining, expires) in try await db.client.query(
                "SELECT currency, remaining, expires_at FROM balance_lots ORDER BY currency", logger: TestDatabase.logger
            ).decode((String, Int64, Date).self) {
                lots.append("\(currency) \(remaining) \(Int(expires.timeIntervalSince1970))")
            }
            #expect(lots == ["credits 3 1924992000", "gems 1 1924992000"], "only the deposit with expires_at keeps lots")
        }
    }

    @Test func aDepositMayNotTakeAway() async throws {
        try await TestDatabase.with { db in
            await #expect(throws: (any Error).self) {
                _ = try await Self.deposit([
                    Deposit(user_id: "a", adjustments: ["credits": 5], idempotency_key: "k1"),
                    Deposit(user_id: "a", adjustments: ["credits": -1], idempotency_key: "k2"),
                ], on: db.client)
            }
            let ledger = try await Self.ledger(db.client)
            #expect(ledger.isEmpty, "nothing of the call is made")
        }
    }

    /// The twin of the one statement: the same deposits, one call each, leave the same ledger and
    /// balances (users "one:…" and "many:…" keep the two apart in one database).
    @Test func oneCallForManyEndsAsOneCallForEach() async throws {
        try await TestDatabase.with { db in
            let plan: [(String, [String: Int64], String?)] = [
                ("a", ["credits": 5], "g1"), ("b", ["credits": 1, "gems": 2], "g1"), ("a", ["gems": 4], "g2"), ("a", ["credits": 5], "g1"),
                ("c", ["credits": 0], "g3"), ("b", ["gems": 3], nil), ("a", ["credits": 9, "gems": 1], "g4"), ("b", ["credits": 1], "g1"),
                ("c", ["credits": 8], "g3"), ("a", ["credits": 2], nil),
            ]
            func deposits(_ prefix: String) -> [Deposit] {
                plan.map { Deposit(user_id: prefix + $0.0, adjustments: $0.1, idempotency_key: $0.2) }
            }
            for deposit in deposits("one:") { _ = try await Self.deposit([deposit], on: db.client) }
            _ = try await Self.deposit(deposits("many:"), on: db.client)
            let ledger = try await Self.ledger(db.client)
            func rows(_ prefix: String) -> [LedgerRow] {
                ledger.filter { $0.user.hasPrefix(prefix) }.map { LedgerRow(user: String($0.user.dropFirst(prefix.count)), key: $0.key, balances: $0.balances) }
            }
            #expect(rows("one:").count == 7)
            #expect(rows("many:") == rows("one:"))
            let store = BalanceStore(client: db.client, logger: TestDatabase.logger)
            for user in ["a", "b", "c"] {
                let one = try await store.balances(user: "one:" + user)
                #expect(try await store.balances(user: "many:" + user) == one)
            }
        }
    }

    /// Calls the function; the number of rows it made.
    static func deposit(_ deposits: [Deposit], on client: PostgresClient) async throws -> Int {
        let json = String(decoding: try JSONEncoder().encode(deposits), as: UTF8.self)
        var made = 0
        for try await ids in try await client.query(
            "SELECT sluice_deposit_balances(\(json)::jsonb)", logger: TestDatabase.logger
        ).decode([UUID].self) {
            made = ids.count
        }
        return made
    }

    static func ledger(_ client: PostgresClient) async throws -> [LedgerRow] {
        var rows: [LedgerRow] = []
        for try await (user, key, balances) in try await client.query(
            "SELECT user_id, idempotency_key, balances::text FROM balance_transactions ORDER BY position", logger: TestDatabase.logger
        ).decode((String, String?, String).self) {
            rows.append(LedgerRow(user: user, key: key, balances: balances))
        }
        return rows
    }
}
