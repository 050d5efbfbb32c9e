// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport

/// `sluice_adjust_balances` through ``BalanceStore``: the take-back floor, the causes the ledger
/// accepts, and the currency rule in Swift and SQL.
@Suite(.timeLimit(.minutes(3)))
struct BalanceStoreTests {
    @Test func aTakeBackStopsAtZeroAndRecordsWhatItCouldNotTake() async throws {
        try await TestDatabase.with { db in
            let store = BalanceStore(client: db.client, logger: TestDatabase.logger)
            _ = try await store.adjust(user: "u", try BalanceAdjustments(["credits": 30, "gems": 5]), cause: .purchase, key: "p", digest: nil)
            let outcome = try await store.adjust(
                user: "u", try BalanceAdjustments(["credits": -50, "gems": -2]), cause: .refund, key: "r", digest: nil, floor: true)
            guard case .applied(let row) = outcome else {
                Issue.record("a take-back was refused: \(outcome)")
                return
            }
            #expect(row.applied == ["credits": -30, "gems": -2] && row.balances == ["credits": 0, "gems": 3])
            #expect(row.shortfall == ["credits": 20])
            #expect(try await store.adjust(user: "u", try BalanceAdjustments(["credits": -50]), cause: .refund, key: "r", digest: nil, floor: true)
                == .replayed(row), "the same take-back twice takes once")
            #expect(try await store.balances(user: "u") == ["credits": 0, "gems": 3])
        }
    }

    /// ``BalanceCause`` and the `cause` check of sql/0035 list the same values.
    @Test func everyCauseIsOneTheLedgerAcceptsAndNoOther() async throws {
        try await TestDatabase.with { db in
            let store = BalanceStore(client: db.client, logger: TestDatabase.logger)
            for cause in BalanceCause.allCases {
                let outcome = try await store.adjust(user: "u", try BalanceAdjustments(["credits": 1]), cause: cause, key: cause.rawValue, digest: nil)
                guard case .applied(let row) = outcome else {
                    Issue.record("\(cause): \(outcome)")
                    continue
                }
                #expect(row.cause == cause)
            }
            var refused = false
            do {
                let rows = try await db.client.query(
                    "SELECT sluice_adjust_balances('u', '{\"credits\": 1}', 'gift', NULL, NULL, false, NULL, NULL, NULL)", logger: TestDatabase.logger)
                for try await _ in rows {}
            } catch { refused = true }
            #expect(refused, "a cause Swift does not know")
        }
    }

    /// ``BalanceAdjustments/isCurrency(_:)`` and the `currency` check of sql/0035 agree.
    @Test(arguments: ["credits", "a", "gems_2", String(repeating: "x", count: 32), "Credits", "2x", "_x", "", String(repeating: "x", count: 33), "cr-edits", "créd"])
    func theCurrencyRuleIsTheSameInSwiftAndSQL(name: String) async throws {
        try await TestDatabase.with { db in
            var accepted = true
            do {
                let rows = try await db.client.query(
                    "INSERT INTO balances (user_id, currency, amount) VALUES ('u', \(name), 0)", logger: TestDatabase.logger)
                for try await _ in rows {}
            } catch { accepted = false }
            #expect(accepted == BalanceAdjustments.isCurrency(name), "\(name)")
        }
    }
}
