// SPDX-License-Identifier: Apache-2.0
import Shared

/// Whose state an outgoing event is about (`cause.provider`), and what an endpoint's `sources`
/// filter names (`sluice_endpoint_takes`): one of the three stores.
enum StoreProvider: String, Sendable, CaseIterable {
    case stripe
    case apple
    case googlePlay = "google_play"

    /// The store of a purchase's source.
    init(_ source: PurchaseSource) {
        switch source {
        case .webCheckout: self = .stripe
        case .storeKit: self = .apple
        case .playStore: self = .googlePlay
        }
    }

    /// The store of a queue row's source (an `account` row registers an Apple token).
    init(_ source: EventSource?) {
        switch source {
        case .stripe: self = .stripe
        case .play, .playPurchase: self = .googlePlay
        case .apple, .storekit, .account, nil: self = .apple
        }
    }

    /// The names, as `--source` and the docs list them.
    static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}
