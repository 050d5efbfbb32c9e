// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing
import TestSupport

/// `worker balance adjust` and `show`, run as the built binary against a real PostgreSQL.
@Suite(.timeLimit(.minutes(3)))
struct BalanceCommandTests {
    @Test func supportAdjustsBalancesRecordedWithWhoAndWhy() async throws {
        try await TestDatabase.with { db in
            let added = try await OperatorCommandTests.worker(
                db, ["balance", "adjust", "user_s", "--credits", "+100", "--gems=3", "--reason", "goodwill", "--by", "alice", "--key", "t-1"])
            #expect(added.status == 0, "\(added.stderr)")
            #expect(added.stdout.contains("credits +100 → 100, gems +3 → 3 — goodwill [by alice]"), "\(added.stdout)")
            let again = try await OperatorCommandTests.worker(
                db, ["balance", "adjust", "user_s", "--credits", "+100", "--gems=3", "--reason", "goodwill", "--by", "alice", "--key", "t-1"])
            #expect(again.status == 0 && again.stdout.hasPrefix("already made with this key"), "\(again.stdout)")
            let taken = try await OperatorCommandTests.worker(db, ["balance", "adjust", "user_s", "--credits", "-40", "--reason", "abuse", "--by", "bob"])
            #expect(taken.status == 0, "\(taken.stderr)")
            let tooMuch = try await OperatorCommandTests.worker(db, ["balance", "adjust", "user_s", "--credits", "-61", "--gems", "-1", "--reason", "x"])
            #expect(tooMuch.status == 1 && tooMuch.stderr.contains("not enough credits (balance 60): nothing was changed"), "\(tooMuch.stderr)")
            for wrong in [["--credits", "ten"], ["--Credits", "1"], [], ["--credits", "0"], ["credits", "1"]] {
                let refused = try await OperatorCommandTests.worker(db, ["balance", "adjust", "user_s", "--reason", "x"] + wrong)
                #expect(refused.status == 2, "\(wrong): \(refused.stderr)")
            }
            #expect(try await BalanceStore(client: db.client, logger: TestDatabase.logger).balances(user: "user_s") == ["credits": 60, "gems": 3])

            let shown = try await OperatorCommandTests.worker(db, ["balance", "show", "user_s", "--json"])
            let object = try #require(try OperatorCommandTests.json(shown.stdout) as? [String: Any])
            #expect(object["balances"] as? [String: Int] == ["credits": 60, "gems": 3])
            let rows = try #require(object["balance_transactions"] as? [[String: Any]])
            #expect(rows.map { $0["cause"] as? String } == ["operator", "operator"])
            #expect(rows.map { $0["actor"] as? String } == ["bob", "alice"])
            #expect(try await OperatorCommandTests.worker(db, ["balance", "show", "user_s"]).stdout.hasPrefix("user_s: credits 60, gems 3"))
        }
    }
}

extension BalanceCommandTests {
    @Test func aProductsCurrencyGrantsAreSetAndClearedFromTheCLI() async throws {
        try await TestDatabase.with { db in
            let added = try await OperatorCommandTests.worker(
                db, ["products", "add", "pro.monthly", "--type", "auto_renewable", "--currency-grants", "credits=1000,gems=2", "--json"])
            #expect(added.status == 0, "\(added.stderr)")
            let object = try #require(try OperatorCommandTests.json(added.stdout) as? [String: Any])
            #expect(object["currency_grants"] as? [String: Int] == ["credits": 1_000, "gems": 2])
            #expect(object["trial_currency_grants"] is NSNull)
            #expect(try await OperatorCommandTests.worker(db, ["products", "update", "pro.monthly", "--trial-currency-grants", "credits=100"]).status == 0)
            for wrong in ["credits=0", "credits=-5", "Credits=5", "credits", "credits=1,credits=2"] {
                #expect(try await OperatorCommandTests.worker(db, ["products", "update", "pro.monthly", "--currency-grants", wrong]).status == 2, "\(wrong)")
            }
            let catalog = CatalogStore(client: db.client, logger: TestDatabase.logger)
            var product = try #require(try await catalog.product("pro.monthly"))
            #expect(product.currencyGrants == ["credits": 1_000, "gems": 2] && product.trialCurrencyGrants == ["credits": 100])
            #expect(try await OperatorCommandTests.worker(db, ["products", "update", "pro.monthly", "--trial-currency-grants", "", "--currency-grants", ""]).status == 0)
            product = try #require(try await catalog.product("pro.monthly"))
            #expect(product.currencyGrants.isEmpty && product.trialCurrencyGrants == nil)
        }
    }
}
