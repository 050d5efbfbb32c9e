// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared

/// Applies stored Stripe events: decode, find what the event is about (``StripeObjectKind``: its
/// ids, metadata and the stored links), lock it, load, decide (``StripeDecider``), save, record and
/// complete — one transaction.
///
/// An event that cannot be linked to a user or product yet throws ``Unlinked``: the job is
/// retried with backoff (the linking event may still be on its way) and then dead-lettered.
/// Events of a connected account not in `STRIPE_ACCOUNTS` are recorded as ignored.
struct StripeEventHandler: BatchableJobHandler {
    let logger: Logger
    /// `STRIPE_ACCOUNTS`: the connected accounts whose events are applied.
    var accounts: Set<String> = []
    /// Where applied changes are announced; `nil` announces nothing.
    var outbox: ForwardOutbox?

    func applyAnnouncing(_ job: ClaimedJob, on connection: PostgresConnection) async throws -> AppliedEvent {
        try await apply(job, on: connection, announcer: outbox?.announcer(for: job, logger: logger))
    }

    func didCommit(_ job: ClaimedJob, _ applied: AppliedEvent) {
        applied.didCommit(job, outbox: outbox, logger: logger)
    }

    /// Applies the event inside the caller's transaction on `connection` (`worker rebuild`'s), announcing nothing.
    func apply(_ job: ClaimedJob, on connection: PostgresConnection) async throws {
        try await apply(job, on: connection, announcer: nil)
    }

    /// Applies the event inside the caller's transaction on `connection`.
    @discardableResult
    func apply(_ job: ClaimedJob, on connection: PostgresConnection, announcer: ChangeAnnouncer?) async throws -> AppliedEvent {
        let event = try StripeEvent(eventID: job.id, body: Data(buffer: job.payload))
        let store = StateStore(connection: connection, logger: logger)
        if event.type == StripeEventType.accountApplicationDeauthorized.rawValue {
            let removed = try await event.account.asyncMap { try await store.removeLinks(ofAccount: $0) } ?? 0
            return try await StateWriter.save(
                .recorded("forgot \(removed) links of the deauthorized account"), eventID: job.id, to: store, announcer: announcer)
        }
        if let account = event.account, !accounts.contains(account) {
            return try await StateWriter.save(
                .recorded("ignored: connected account \(account) is not in STRIPE_ACCOUNTS"), eventID: job.id, to: store, announcer: announcer)
        }
        var subject = try await Self.subject(of: event, in: store)
        if subject.entitlementKey == nil, let transactionKey = subject.transactionKey {
            subject.entitlementKey = try await store.entitlementKey(
                ofTransaction: transactionKey, source: .webCheckout, environment: PurchaseEnvironment(livemode: event.livemode))
        }
        // The entitlement and the payment are both locked (a payment's events and its invoice's
        // lock different entitlement keys while the invoice is unknown), in a fixed order so
        // two events that lock the same keys never deadlock.
        let keys = Set([subject.entitlementKey, subject.transactionKey, subject.replacedEntitlementKey].compactMap { $0 })
        try await store.lock(keys)
        var state = StripeDecider.State()
        if let key = subject.entitlementKey { state.entitlement = try await store.entitlement(key) }
        if let key = subject.transactionKey {
            state.transaction = try await store.transaction(.webCheckout, key, environment: PurchaseEnvironment(livemode: event.livemode))
        }
        if let key = subject.replacedEntitlementKey { state.replaced = try await store.entitlement(key) }
        if state.transaction == nil, let key = subject.transactionKey {
            subject.paymentIsOutsideTheApp = try await store.link(.stripeOutsidePayment, key, scope: event.scope.prefix) != nil
        }
        return try await StateWriter.save(StripeDecider.decide(event, subject, state), eventID: job.id, to: store, announcer: announcer)
    }

    /// Which entitlement, transaction, user and product an event is about: what its object names
    /// itself, then what the stored links of its ids (in the event's scope) say.
    static func subject(of event: StripeEvent, in store: StateStore) async throws -> StripeDecider.Subject {
        let scope = event.scope
        var subject = StripeDecider.Subject(scope: scope)
        guard let kind = StripeObjectKind.of(event.object) else { return subject }
        let o = event.object
        let links = try await store.links(kind.ids(in: o).map { (kind: $0.0, externalID: $0.1) }, scope: scope.prefix)
        let paymentLinks = links.filter { $0.kind != .stripeCustomer }

        subject.transactionKey = paymentLinks.lazy.compactMap(\.transactionKey).first ?? kind.paymentID(in: o)
        subject.invoiceID = kind.id(.stripeInvoice, in: o) ?? subject.transactionKey.flatMap { $0.hasPrefix("in_") ? $0 : nil }
        if let subscription = kind.id(.stripeSubscription, in: o) {
            subject.entitlementKey = scope.subscriptionKey(subscription)
        } else if let linked = paymentLinks.lazy.compactMap(\.entitlementKey).first {
            subject.entitlementKey = linked
        } else if kind.isPurchase, subject.invoiceID == nil {
            subject.entitlementKey = subject.transactionKey.map(scope.paymentKey)
        }
        subject.userID = kind.userID(in: o) ?? links.lazy.compactMap(\.userID).first
        subject.productID = kind.productID(in: o, previousAttributes: event.previousAttributes)
        subject.replacedEntitlementKey = kind.metadata("replaces_subscription", in: o).map(scope.subscriptionKey)
        // A link that only ties a payment to its invoice says nothing of whose it is.
        subject.isKnown = kind.namesTheApp(o) || paymentLinks.contains { $0.entitlementKey != nil || $0.userID != nil }
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
