// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import ServiceLifecycle
import Shared

/// Cancels at Stripe the web checkouts nobody will confirm (docs/checkout.md): open ones past
/// their window (`CHECKOUT_WINDOW_SECONDS`) become `expired`, and ones a newer checkout replaced
/// are cancelled too, so neither can be paid later. A checkout whose payment is already under way
/// or done is left alone (released). Runs in the worker holding the `checkout-sweep` lease, every
/// `CLOCK_SWEEP_INTERVAL_SECONDS`, when `STRIPE_CHECKOUT_KEY` is set.
struct CheckoutSweepService: Service, CustomStringConvertible {
    let store: CheckoutStore
    let stripe: StripeCheckoutAPI
    let lease: MaintenanceLease
    let interval: Duration
    let logger: Logger

    var description: String { "CheckoutSweepService" }

    func run() async throws {
        await lease.runPeriodically(every: interval, failure: "cancelling unconfirmed checkouts failed", logger: logger) { try await runOnce() }
    }

    /// One pass, if this worker holds the lease.
    ///
    /// - Returns: how many were cancelled and released, or `nil` when another worker holds the lease.
    @discardableResult
    func runOnce() async throws -> (cancelled: Int, released: Int)? {
        try await lease.ifHeld(interval: interval) {
            var cancelled = 0
            var released = 0
            // This key's mode only: a test key cannot cancel live objects, nor a live key test ones.
            for row in try await store.dueForCancelling(in: stripe.environment) {
                try Task.checkCancellation()
                do {
                    if try await sweep(row) { cancelled += 1 } else { released += 1 }
                } catch {
                    // A pass stopped at its time limit ends here, not with a warning a row.
                    if Task.isCancelled { throw error }
                    // One row Stripe will not take now does not hold up the others; it is tried again next pass.
                    logger.warning("a checkout could not be cancelled at Stripe", metadata: [
                        "checkout": "\(row.id)", "error": "\(ErrorText.describe(error))"])
                }
            }
            for row in try await store.dueForReplacing(in: stripe.environment) {
                try Task.checkCancellation()
                do {
                    try await replace(row)
                } catch {
                    if Task.isCancelled { throw error }
                    logger.warning("a replaced subscription could not be cancelled at Stripe", metadata: [
                        "checkout": "\(row.id)", "error": "\(ErrorText.describe(error))"])
                }
            }
            if cancelled + released > 0 {
                logger.info("swept unconfirmed checkouts", metadata: ["cancelled": "\(cancelled)", "released": "\(released)"])
            }
            return (cancelled, released)
        }
    }

    /// - Returns: whether the checkout was cancelled at Stripe (`false`: its payment was under way or done).
    private func sweep(_ row: CheckoutRow) async throws -> Bool {
        let outcome = try await store.outcome(of: row)
        guard Self.shouldCancel(outcome.status) else {
            try await store.finishSweep(of: row.id, cancelled: false)
            return false
        }
        if let session = row.objects.checkoutSession {
            try await stripe.expireCheckoutSession(session, idempotencyKey: row.idempotencyKey("expire"), logger: logger)
        }
        if let subscription = row.objects.subscription {
            // Only one nobody paid or gave a card to: an incomplete one, or a trial whose
            // SetupIntent is still pending. A paid one whose events are on their way stays.
            guard try await stripe.isUnconfirmedSubscription(subscription, logger: logger) else {
                try await store.finishSweep(of: row.id, cancelled: false)
                return false
            }
            try await stripe.cancelSubscription(subscription, logger: logger)
        }
        if let paymentIntent = row.objects.paymentIntent, row.kind == .payment {
            try await stripe.cancelPaymentIntent(paymentIntent, idempotencyKey: row.idempotencyKey("cancel"), logger: logger)
        }
        try await store.finishSweep(of: row.id, cancelled: true)
        return true
    }

    /// Once a checkout that replaces the user's older subscription is paid, the older one is
    /// cancelled at Stripe with proration (its unused time credited); once it failed, nothing is.
    private func replace(_ row: CheckoutRow) async throws {
        guard let old = row.replacesSubscription else { return }
        switch try await store.outcome(of: row).status {
        case .pending, .processing:
            return
        case .succeeded:
            try await stripe.cancelSubscription(old, prorate: true, logger: logger)
            logger.info("a replaced subscription was cancelled with proration", metadata: ["checkout": "\(row.id)"])
        case .failed, .refunded, .disputed:
            break
        }
        try await store.settleReplacement(of: row.id)
    }

    /// A checkout is cancelled only while nobody has paid it: not once it is processing or ended.
    static func shouldCancel(_ status: CheckoutStatus) -> Bool {
        status == .pending || status == .failed
    }
}
