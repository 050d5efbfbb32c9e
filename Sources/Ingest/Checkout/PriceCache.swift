// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Shared
import Synchronization

/// Stripe prices by catalog reference (price id or lookup key), kept for ``lifetime`` so a
/// paywall or a checkout does not ask Stripe each time; a price changed at Stripe shows within it.
final class PriceCache: Sendable {
    private let stripe: StripeCheckoutAPI
    private let lifetime: TimeInterval
    private let prices = Mutex<[String: (price: StripePrice?, fetchedAt: Date)]>([:])

    init(stripe: StripeCheckoutAPI, lifetime: TimeInterval = 300) {
        self.stripe = stripe
        self.lifetime = lifetime
    }

    /// The price `reference` names; `nil` when Stripe has none by that id or lookup key.
    func price(_ reference: String, logger: Logger) async throws -> StripePrice? {
        let now = Date()
        if let kept = prices.withLock({ $0[reference] }), now.timeIntervalSince(kept.fetchedAt) < lifetime { return kept.price }
        let price = try await stripe.price(reference, logger: logger)
        prices.withLock { $0[reference] = (price, now) }
        return price
    }

    /// The price if it is kept, without asking Stripe (for the product list while Stripe is down).
    func kept(_ reference: String) -> StripePrice? {
        prices.withLock { $0[reference]?.price }
    }
}
