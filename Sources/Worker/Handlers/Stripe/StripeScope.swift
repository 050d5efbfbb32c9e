// SPDX-License-Identifier: Apache-2.0
import Shared

/// Whose state a Stripe event may touch: the platform's or one connected account's, live or test.
///
/// Entity keys and provider links carry the scope, so an id or a metadata value in one account's
/// or mode's event never reaches another's state. The platform's live keys have no prefix
/// (`stripe:subscription:sub_…`), as before scopes existed.
struct StripeScope: Sendable, Hashable {
    var account: String?
    var livemode: Bool

    /// `""`, `test:`, `acct_…:` or `acct_…:test:`: the prefix of entity keys and the scope of links.
    var prefix: String { EntityKey.stripeScope(account: account, livemode: livemode) }

    static let platformLive = StripeScope(account: nil, livemode: true)

    func subscriptionKey(_ id: String) -> String { EntityKey.stripeSubscription(id: id, account: account, livemode: livemode).text }
    func paymentKey(_ id: String) -> String { EntityKey.stripePayment(id: id, account: account, livemode: livemode).text }

    /// Whether `key` is an entity key of this scope (a subscription's, not a one-time payment's).
    func isSubscriptionKey(_ key: String) -> Bool { key.hasPrefix(subscriptionKey("")) }
}
