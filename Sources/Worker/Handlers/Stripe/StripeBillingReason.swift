// SPDX-License-Identifier: Apache-2.0

/// Why Stripe made an invoice (its `billing_reason`), as far as Sluice reads it: the same in every
/// API version. Others (`manual`, `subscription_threshold`, `upcoming`, …) are not cases: they say
/// nothing of a subscription's period.
enum StripeBillingReason: String, Sendable {
    /// The subscription's first invoice (a trial's $0 one too).
    case subscriptionCreate = "subscription_create"
    /// The automatic charge of the next period.
    case subscriptionCycle = "subscription_cycle"
    /// A plan change billed at once (proration with `always_invoice`).
    case subscriptionUpdate = "subscription_update"

    init?(invoice: JSONValue) {
        guard let text = invoice["billing_reason"].string else { return nil }
        self.init(rawValue: text)
    }

    /// Whether the invoice's payment renews the subscription (an automatic charge) rather than
    /// being the customer's purchase (the first invoice, a plan change): a currency grant's cause.
    var renews: Bool { self == .subscriptionCycle }
}
