// SPDX-License-Identifier: Apache-2.0

/// The key of an entitlement (`entitlements.entity_key`): what one entitlement's events lock,
/// order and are announced under. Its format, written here and nowhere else:
///
/// | what | key |
/// |---|---|
/// | an App Store purchase, production | `apple:<originalTransactionId>` |
/// | an App Store purchase, Sandbox | `apple:sandbox:<originalTransactionId>` |
/// | a Google Play purchase (the first token of an upgrade chain) | `play:<purchaseToken>` |
/// | a Google Play test purchase | `play:sandbox:<purchaseToken>` |
/// | a Stripe subscription | `stripe:<scope>subscription:<sub_…>` |
/// | a Stripe one-time payment | `stripe:<scope>payment:<pi_…, in_…>` |
/// | another product of a subscription's items | `<the subscription's key>#<product>` (``companion(of:product:)``) |
///
/// A Stripe `<scope>` is `""` (the platform, live), `test:`, `acct_…:` or `acct_…:test:`
/// (``stripeScope(account:livemode:)``): an id of one account or mode never reaches another's
/// state. A ledger row without an entitlement is ordered under ``transaction(source:environment:id:)``.
public enum EntityKey: Equatable, Sendable {
    case apple(originalTransactionID: String, environment: PurchaseEnvironment)
    case stripeSubscription(id: String, account: String?, livemode: Bool)
    case stripePayment(id: String, account: String?, livemode: Bool)
    case play(purchaseToken: String, environment: PurchaseEnvironment)
    /// A key of no other form (a companion's, or one written by an earlier release).
    case other(String)

    /// The separator between a subscription's key and a companion's product.
    public static let companionSeparator = "#"

    /// The scope of a Stripe key, and of a Stripe provider link.
    public static func stripeScope(account: String?, livemode: Bool) -> String {
        (account.map { "\($0):" } ?? "") + (livemode ? "" : "test:")
    }

    /// The key of the companion entitlement of `product` on the subscription `subscriptionKey`.
    public static func companion(of subscriptionKey: String, product: String) -> String {
        subscriptionKey + companionSeparator + product
    }

    /// The ordering key of a ledger row's events: `transaction:<source>:<environment>:<id>`.
    public static func transaction(source: PurchaseSource, environment: PurchaseEnvironment, id: String) -> String {
        "transaction:\(source.rawValue):\(environment.rawValue):\(id)"
    }

    /// The key as stored.
    public var text: String {
        switch self {
        case let .apple(id, environment):
            "apple:" + (environment == .sandbox ? "sandbox:" : "") + id
        case let .stripeSubscription(id, account, livemode):
            "stripe:" + Self.stripeScope(account: account, livemode: livemode) + "subscription:" + id
        case let .stripePayment(id, account, livemode):
            "stripe:" + Self.stripeScope(account: account, livemode: livemode) + "payment:" + id
        case let .play(token, environment):
            "play:" + (environment == .sandbox ? "sandbox:" : "") + token
        case let .other(key):
            key
        }
    }

    /// What a stored key names; a key of no known form (a companion's too) is ``other(_:)``.
    public init(_ key: String) {
        guard !key.contains(Self.companionSeparator) else {
            self = .other(key)
            return
        }
        let parts = key.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        switch parts.first {
        case "apple" where parts.count == 2:
            self = .apple(originalTransactionID: parts[1], environment: .production)
        case "apple" where parts.count == 3 && parts[1] == "sandbox":
            self = .apple(originalTransactionID: parts[2], environment: .sandbox)
        case "play" where parts.count == 2:
            self = .play(purchaseToken: parts[1], environment: .production)
        case "play" where parts.count == 3 && parts[1] == "sandbox":
            self = .play(purchaseToken: parts[2], environment: .sandbox)
        case "stripe" where parts.count >= 3 && parts.count <= 5:
            let kind = parts[parts.count - 2], id = parts[parts.count - 1]
            let scope = Array(parts.dropFirst().dropLast(2))
            let account = scope.first { $0.hasPrefix("acct_") }
            let livemode = !scope.contains("test")
            guard scope.count == (account == nil ? 0 : 1) + (livemode ? 0 : 1) else {
                self = .other(key)
                return
            }
            switch kind {
            case "subscription": self = .stripeSubscription(id: id, account: account, livemode: livemode)
            case "payment": self = .stripePayment(id: id, account: account, livemode: livemode)
            default: self = .other(key)
            }
        default:
            self = .other(key)
        }
    }
}
