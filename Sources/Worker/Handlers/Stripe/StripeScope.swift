// SPDX-License-Identifier: Apache-2.0

/// Whose state a Stripe event may touch: the platform's or one connected account's, live or test.
///
/// Entity keys and provider links carry the scope, so an id or a metadata value in one account's
/// or mode's event never reaches another's state. The platform's live keys have no prefix
/// (`stripe:subscription:sub_…`), as before scopes existed.
struct StripeScope: Sendable, Hashable {
    var account: String?
    var livemode: Bool

    /// `""`, `test:`, `acct_…:` or `acct_…:test:`: the prefix of entity keys and the scope of links.
    var prefix: String { (account.map { "\($0):" } ?? "") + (livemode ? "" : "test:") }

    static let platformLive = StripeScope(account: nil, livemode: true)

    func subscriptionKey(_ id: String) -> String { "stripe:\(prefix)subscription:\(id)" }
    func paymentKey(_ id: String) -> String { "stripe:\(prefix)payment:\(id)" }

    /// Whether `key` is an entity key of this scope (a subscription's, not a one-time payment's).
    func isSubscriptionKey(_ key: String) -> Bool { key.hasPrefix("stripe:\(prefix)subscription:") }
}
