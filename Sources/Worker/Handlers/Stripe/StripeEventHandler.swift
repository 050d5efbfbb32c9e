// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import Shared

/// Applies stored Stripe events: decode, find what the event is about (ids, metadata, links),
/// lock it, load, decide (``StripeDecider``), save, record and complete — one transaction.
///
/// An event that cannot be linked to a user or product yet throws ``Unlinked``: the job is
/// retried with backoff (the linking event may still be on its way) and then dead-lettered.
struct StripeEventHandler: JobHandler {
    let logger: Logger

    func handle(_ job: ClaimedJob, completion: JobCompletion) async throws {
        let event = try StripeEvent(eventID: job.id, body: Data(buffer: job.payload))
        _ = try await completion.commit { connection in
            let store = StateStore(connection: connection, logger: logger)
            if event.type == "account.application.deauthorized" {
                let removed = try await event.account.asyncMap { try await store.removeLinks(ofAccount: $0) } ?? 0
                try await StateWriter.save(.recorded("forgot \(removed) links of the deauthorized account"), eventID: job.id, to: store)
                return
            }
            var subject = try await Self.subject(of: event, in: store)
            if subject.entitlementKey == nil, let transactionKey = subject.transactionKey {
                subject.entitlementKey = try await store.transaction(.webCheckout, transactionKey)?.entitlementKey
            }
            // Lock in a fixed order, so two events that lock the same two keys never deadlock.
            let keys = Set([subject.entitlementKey ?? subject.transactionKey, subject.replacedEntitlementKey].compactMap { $0 })
            for key in keys.sorted() { try await store.lock(key) }
            var state = StripeDecider.State()
            if let key = subject.entitlementKey { state.entitlement = try await store.entitlement(key) }
            if let key = subject.transactionKey { state.transaction = try await store.transaction(.webCheckout, key) }
            if let key = subject.replacedEntitlementKey { state.replaced = try await store.entitlement(key) }
            try await StateWriter.save(StripeDecider.decide(event, subject, state), eventID: job.id, to: store)
        }
    }

    /// Which entitlement, transaction, user and product an event is about.
    static func subject(of event: StripeEvent, in store: StateStore) async throws -> StripeDecider.Subject {
        let o = event.object
        var subject = StripeDecider.Subject(productID: event.metadata("product_id"))
        var user = event.metadata("user_id")
        switch o["object"].string {
        case "payment_intent":
            let id = o["id"].string
            subject.transactionKey = id
            let link = try await id.asyncMap { try await store.link(.stripePaymentIntent, $0) }
            if let subscription = event.metadata("subscription_id") {
                subject.entitlementKey = StripeDecider.subscriptionKey(subscription)
            } else {
                subject.entitlementKey = link?.entitlementKey ?? id.map(StripeDecider.paymentKey)
            }
            user = user ?? link?.userID
            subject.replacedEntitlementKey = event.metadata("replaces_subscription").map(StripeDecider.subscriptionKey)
        case "checkout.session":
            let transactionKey = o["payment_intent"].id ?? o["id"].string
            subject.transactionKey = transactionKey
            subject.entitlementKey = o["mode"].string == "subscription"
                ? o["subscription"].id.map(StripeDecider.subscriptionKey) : transactionKey.map(StripeDecider.paymentKey)
            user = user ?? o["client_reference_id"].string
            subject.replacedEntitlementKey = event.metadata("replaces_subscription").map(StripeDecider.subscriptionKey)
        case "subscription":
            let id = o["id"].string
            subject.entitlementKey = id.map(StripeDecider.subscriptionKey)
            if user == nil, let id { user = try await store.link(.stripeSubscription, id)?.userID }
            subject.productID = subject.productID ?? o["items.data.0.price.product"].id ?? o["plan.product"].id
        case "invoice":
            subject.transactionKey = o["id"].string
            subject.entitlementKey = (o["subscription"].id ?? o["parent.subscription_details.subscription"].id).map(StripeDecider.subscriptionKey)
        case "charge", "dispute":
            let charge = o["object"].string == "charge" ? o["id"].string : o["charge"].id
            var link = try await charge.asyncMap { try await store.link(.stripeCharge, $0) }
            if link == nil, let intent = o["payment_intent"].id { link = try await store.link(.stripePaymentIntent, intent) }
            subject.transactionKey = link?.transactionKey ?? o["payment_intent"].id
            subject.entitlementKey = link?.entitlementKey
        case "setup_intent":
            let link = try await o["id"].string.asyncMap { try await store.link(.stripeSetupIntent, $0) }
            subject.transactionKey = link?.transactionKey
            subject.entitlementKey = link?.entitlementKey
            user = user ?? link?.userID
        default:
            break
        }
        if user == nil, let customer = o["customer"].id {
            user = try await store.link(.stripeCustomer, customer)?.userID
        }
        subject.userID = user
        return subject
    }
}

extension Optional {
    /// `map` for an async transform.
    func asyncMap<Result>(_ transform: (Wrapped) async throws -> Result?) async rethrows -> Result? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
