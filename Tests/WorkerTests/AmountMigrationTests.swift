// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// `0027_amounts_in_minor_units`: App Store rows stored with the old `price / 10`, and Stripe's
/// ISK and MGA rows, are rescaled to their currency's minor unit, by the same tables as the
/// worker's (issue 36).
struct AmountMigrationTests {
    static let version = "0027_amounts_in_minor_units"

    static func migration() throws -> Migration {
        try #require(try Migration.load(from: TestDatabase.migrationsDirectory).first { $0.version == version })
    }

    /// The currency lists the migration spells out are ``CurrencyMinorUnits``'s, digit for digit:
    /// one rule, two copies, tied here.
    @Test func theMigrationsListsAreTheSwiftTable() throws {
        let sql = try Self.migration().sql
        func codes(after marker: String) throws -> Set<String> {
            let start = try #require(sql.range(of: marker)).upperBound
            let list = sql[start...].prefix { $0 != ")" }
            return Set(list.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " '\n")) })
        }
        let byDigits = Dictionary(grouping: CurrencyMinorUnits.exceptions.keys, by: { CurrencyMinorUnits.exceptions[$0]! }).mapValues(Set.init)
        #expect(try codes(after: "WHEN upper(currency) IN (") == byDigits[0])
        #expect(try codes(after: "THEN round(amount / 100.0)::bigint\n        WHEN upper(currency) IN (") == byDigits[3])
        #expect(try codes(after: "THEN amount * 10\n        WHEN upper(currency) IN (") == byDigits[4])
        #expect(try codes(after: "AND upper(currency) IN (").union(codes(after: "'XPF',\n")) == Set(CurrencyMinorUnits.exceptions.keys))
        // Stripe's own scale (StripeAmounts.stripeDigits): ISK two-decimal, MGA zero-decimal.
        let stripe = Dictionary(uniqueKeysWithValues: StripeAmounts.stripeDigits.map { ($0.key, $0.value - CurrencyMinorUnits($0.key).digits) })
        #expect(stripe == ["ISK": 2, "MGA": -2])
        #expect(sql.contains("amount = round(amount / 100.0)::bigint, amount_refunded = round(amount_refunded / 100.0)::bigint\nWHERE source = 'web_checkout' AND upper(currency) = 'ISK'"))
        #expect(sql.contains("amount = amount * 100, amount_refunded = amount_refunded * 100\nWHERE source = 'web_checkout' AND upper(currency) = 'MGA'"))
    }

    @Test func storedAppStoreAmountsTakeTheirCurrencysMinorUnit() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let all = try Migration.load(from: TestDatabase.migrationsDirectory)
            try await Migrator(client: db.client, logger: TestDatabase.logger).migrate(all.filter { $0.version < "0027" }, functions: [])
            // What `price / 10` stored: ¥480, $9.99, 1.250 KD, and a Stripe yen payment that was right.
            try await db.client.query(
                """
                INSERT INTO transactions (source, provider_transaction_id, status, amount, currency) VALUES
                    ('store_kit', 'jpy', 'succeeded', 48000, 'JPY'), ('store_kit', 'usd', 'succeeded', 999, 'USD'),
                    ('store_kit', 'kwd', 'succeeded', 125, 'KWD'), ('web_checkout', 'pi_jpy', 'succeeded', 480, 'JPY'),
                    ('web_checkout', 'pi_isk', 'succeeded', 149900, 'ISK'), ('web_checkout', 'pi_mga', 'succeeded', 5000, 'MGA')
                """, logger: TestDatabase.logger)
            try await Migrator(client: db.client, logger: TestDatabase.logger).migrate(all, functions: [])
            #expect(try await db.strings("SELECT provider_transaction_id || ' ' || amount FROM transactions ORDER BY 1") == [
                "jpy 480", "kwd 1250", "pi_isk 1499", "pi_jpy 480", "pi_mga 500000", "usd 999",
            ])
        }
    }
}
