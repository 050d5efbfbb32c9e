// SPDX-License-Identifier: Apache-2.0
import Shared
import Testing

/// The entity key's format, as a table: each key written and read back names the same thing, and
/// keys of no known form stay what they are.
struct EntityKeyTests {
    static let rows: [(EntityKey, String)] = [
        (.apple(originalTransactionID: "2000000001", environment: .production), "apple:2000000001"),
        (.apple(originalTransactionID: "2000000001", environment: .sandbox), "apple:sandbox:2000000001"),
        (.stripeSubscription(id: "sub_1", account: nil, livemode: true), "stripe:subscription:sub_1"),
        (.stripeSubscription(id: "sub_1", account: nil, livemode: false), "stripe:test:subscription:sub_1"),
        (.stripeSubscription(id: "sub_1", account: "acct_9", livemode: true), "stripe:acct_9:subscription:sub_1"),
        (.stripeSubscription(id: "sub_1", account: "acct_9", livemode: false), "stripe:acct_9:test:subscription:sub_1"),
        (.stripePayment(id: "pi_1", account: nil, livemode: true), "stripe:payment:pi_1"),
        (.stripePayment(id: "in_1", account: "acct_9", livemode: false), "stripe:acct_9:test:payment:in_1"),
    ]

    @Test(arguments: rows)
    func aKeyIsWrittenAndReadBack(_ key: EntityKey, _ text: String) {
        #expect(key.text == text)
        #expect(EntityKey(text) == key)
    }

    @Test(arguments: [
        "stripe:subscription:sub_1#pro.team", "stripe:refund:re_1", "apple:other:1:2", "stripe:junk:test:subscription:sub_1", "",
    ])
    func aKeyOfNoKnownFormStaysAsItIs(_ text: String) {
        #expect(EntityKey(text) == .other(text))
        #expect(EntityKey(text).text == text)
    }

    @Test func companionsAndLedgerRowsAreNamedFromTheirParts() {
        #expect(EntityKey.companion(of: "stripe:subscription:sub_1", product: "pro.team") == "stripe:subscription:sub_1#pro.team")
        #expect(EntityKey.transaction(source: .webCheckout, environment: .sandbox, id: "pi_1") == "transaction:web_checkout:sandbox:pi_1")
    }
}
