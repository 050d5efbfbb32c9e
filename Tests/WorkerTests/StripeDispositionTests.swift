// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing

@testable import Worker

/// What applying a Stripe event does, decided from the event alone, before anything is read.
/// Both the read-ahead of a batch and the apply use it, so an event that is only recorded never
/// has its links or rows loaded.
struct StripeDispositionTests {
    @Test(arguments: [
        // (type, account, STRIPE_ACCOUNTS) → disposition
        ("payment_intent.succeeded", nil, [], StripeEventHandler.Disposition.mayChangeState),
        ("payment_intent.succeeded", "acct_1", ["acct_1"], .mayChangeState),
        ("payment_intent.succeeded", "acct_2", ["acct_1"], .foreignAccount("acct_2")),
        ("payment_intent.succeeded", "acct_2", [], .foreignAccount("acct_2")),
        ("account.application.deauthorized", "acct_1", ["acct_1"], .deauthorization(account: "acct_1")),
        ("account.application.deauthorized", "acct_2", [], .deauthorization(account: "acct_2")),
        ("account.application.deauthorized", nil, [], .deauthorization(account: nil)),
    ] as [(String, String?, Set<String>, StripeEventHandler.Disposition)])
    func disposition(type: String, account: String?, accounts: Set<String>, expected: StripeEventHandler.Disposition) {
        let handler = StripeEventHandler(logger: .init(label: "test"), accounts: accounts)
        let event = StripeEvent(eventID: 1, id: "evt_1", type: type, created: Date(), account: account, object: .null)
        #expect(handler.disposition(of: event) == expected)
    }
}
