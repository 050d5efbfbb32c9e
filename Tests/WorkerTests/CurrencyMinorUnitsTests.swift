// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Shared
import Testing
import TestSupport

@testable import Worker

/// One ledger, one scale: every amount in ISO 4217 minor units of its currency, whichever store
/// took the money (issue 36: Apple's ¥480 was stored as 48,000 beside Stripe's 480).
@Suite(.timeLimit(.minutes(2)))
struct CurrencyMinorUnitsTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var currency: String
        var milliunits: Int64
        var minorUnits: Int64
        var testDescription: String { "\(milliunits) milliunits of \(currency)" }
    }

    static let rows: [Row] = [
        Row(currency: "USD", milliunits: 9_990, minorUnits: 999),
        Row(currency: "usd", milliunits: 990, minorUnits: 99),
        Row(currency: "EUR", milliunits: 4_999_000, minorUnits: 499_900),
        Row(currency: "JPY", milliunits: 480_000, minorUnits: 480),
        Row(currency: "KRW", milliunits: 1_100_000, minorUnits: 1_100),
        Row(currency: "KWD", milliunits: 1_250, minorUnits: 1_250),
        Row(currency: "BHD", milliunits: 3_990, minorUnits: 3_990),
        Row(currency: "CLF", milliunits: 1_234, minorUnits: 12_340),
        Row(currency: "USD", milliunits: 0, minorUnits: 0),
        // Finer than the minor unit: half away from zero.
        Row(currency: "USD", milliunits: 9_995, minorUnits: 1_000),
        Row(currency: "USD", milliunits: 9_994, minorUnits: 999),
        Row(currency: "JPY", milliunits: 480_500, minorUnits: 481),
        Row(currency: "JPY", milliunits: 480_499, minorUnits: 480),
        Row(currency: "JPY", milliunits: -480_500, minorUnits: -481),
        // A code ISO 4217 does not list has two digits.
        Row(currency: "XYZ", milliunits: 9_990, minorUnits: 999),
    ]

    @Test(arguments: rows) func appleMilliunitsBecomeMinorUnits(_ row: Row) {
        #expect(CurrencyMinorUnits(row.currency).minorUnits(fromMilliunits: row.milliunits) == row.minorUnits)
    }

    @Test func digitsFollowISO4217() {
        #expect(CurrencyMinorUnits("JPY").digits == 0)
        #expect(CurrencyMinorUnits("usd").digits == 2)
        #expect(CurrencyMinorUnits("usd").code == "USD")
        #expect(CurrencyMinorUnits("KWD").digits == 3)
        #expect(CurrencyMinorUnits("CLF").digits == 4)
    }

    /// The same prices bought through Stripe (whose amounts are minor units already) and the App
    /// Store (milliunits), side by side: each pair reads the same amount.
    @Test func stripeAndApplePaymentsInJPYUSDAndKWDReadTheSame() async throws {
        let prices: [(currency: String, minor: Int, apple: Int64)] = [("JPY", 480, 480_000), ("USD", 999, 9_990), ("KWD", 1_250, 1_250)]
        try await SystemHarness.run { system in
            for (index, price) in prices.enumerated() {
                var object = StripeObjects.paymentIntent("pi_money\(index)", user: "user_money", product: "coins.\(index)", amount: price.minor)
                object["currency"] = price.currency.lowercased()
                try await system.stripe("payment_intent.succeeded", object)

                var tx = SampleAppleTransaction(
                    transactionId: "20000000\(index)", bundleId: TestCredentials.bundleID, productId: "gems.\(index)", type: "Non-Consumable")
                tx.price = price.apple
                tx.currency = price.currency
                try await system.sync(tx, userID: "user_money")
            }
            try await system.drain()
            let transactions = try await system.transactions(userID: "user_money")
            #expect(transactions.count == 6)
            for (index, price) in prices.enumerated() {
                let stripe = try #require(transactions.first { $0["product_id"] as? String == "coins.\(index)" })
                let apple = try #require(transactions.first { $0["product_id"] as? String == "gems.\(index)" })
                #expect(stripe["amount"] as? Int == price.minor, "Stripe \(price.currency)")
                #expect(apple["amount"] as? Int == price.minor, "Apple \(price.currency)")
                #expect(stripe["currency"] as? String == price.currency)
                #expect(apple["currency"] as? String == price.currency)
            }
        }
    }
}
