// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

@testable import Worker

/// An invoice's `billing_reason` as Sluice reads it (``StripeBillingReason``): which payments renew
/// a subscription, for a currency grant's cause (docs/credits.md).
struct StripeBillingReasonTests {
    @Test(arguments: [
        (#"{"billing_reason": "subscription_create"}"#, false), (#"{"billing_reason": "subscription_update"}"#, false),
        (#"{"billing_reason": "subscription_cycle"}"#, true), (#"{"billing_reason": "manual"}"#, nil),
        (#"{"billing_reason": null}"#, nil), (#"{}"#, nil),
    ] as [(String, Bool?)])
    func anInvoiceRenewsOnlyByItsCycle(invoice: String, renews: Bool?) throws {
        let object = try JSONValue.parse(Data(invoice.utf8))
        #expect(StripeBillingReason(invoice: object)?.renews == renews)
    }
}
