// SPDX-License-Identifier: Apache-2.0
import Apply
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

    func applyAnnouncing(_ job: ClaimedJob, in store: StateStore) async throws -> AppliedEvent {
        try await apply(job, in: store, announcer: await outbox?.announcer(for: job, logger: logger))
    }

    func didCommit(_ job: ClaimedJob, _ applied: AppliedEvent) {
        applied.didCommit(job, outbox: outbox, logger: logger)
    }

    /// Applies the event inside the caller's transaction on `connection` (`worker rebuild`'s), announcing nothing.
    func apply(_ job: ClaimedJob, on connection: PostgresConnection) async throws {
        let store = StateStore(connection: connection, logger: logger)
        try await apply(job, in: store, announcer: nil)
        try await store.flush()
    }

    /// The ids whose links ``subject(of:in:)`` looks up, and the payment's outside-the-app mark.
    func linksToPrefetch(for job: ClaimedJob, in store: StateStore) -> [PrefetchedRows.LinkKey] {
        guard let event = try? store.payload(of: job, StripeEvent.init(job:)), changesState(event),
              let kind = StripeObjectKind.of(event.object)
        else { return [] }
        let scope = event.scope.prefix
        var keys = kind.ids(in: event.object).map { PrefetchedRows.LinkKey($0.kind, $0.id, scope: scope) }
        if let payment = kind.paymentID(in: event.object) { keys.append(.init(.stripeOutsidePayment, payment, scope: scope)) }
        return keys
    }

    func rowsToPrefetch(for job: ClaimedJob, in store: StateStore) async throws -> PrefetchedRows.Plan {
        guard let event = try? store.payload(of: job, StripeEvent.init(job:)), changesState(event) else { return .init() }
        let subject = try await Self.resolvedSubject(of: event, in: store)
        let entitlements = [subject.entitlementKey, subject.replacedEntitlementKey].compactMap { $0 }
        return PrefetchedRows.Plan(
            lockKeys: subject.lockKeys, entitlementKeys: Set(entitlements),
            transactionKeys: Set(subject.transactionKey.map { [.init(.webCheckout, $0, environment: PurchaseEnvironment(livemode: event.livemode))] } ?? []))
    }

    /// What applying an event does, decided from the event alone: the two kinds that are only
    /// recorded, and the rest, which may change state.
    enum Disposition: Equatable {
        /// `account.application.deauthorized`: the account's links are forgotten.
        case deauthorization(account: String?)
        /// An event of a connected account not in `STRIPE_ACCOUNTS`: recorded as ignored.
        case foreignAccount(String)
        case mayChangeState
    }

    func disposition(of event: StripeEvent) -> Disposition {
        if event.type == StripeEventType.accountApplicationDeauthorized.rawValue { return .deauthorization(account: event.account) }
        if let account = event.account, !accounts.contains(account) { return .foreignAccount(account) }
        return .mayChangeState
    }

    private func changesState(_ event: StripeEvent) -> Bool { disposition(of: event) == .mayChangeState }

    /// Applies the event inside the caller's transaction.
    @discardableResult
    func apply(_ job: ClaimedJob, in store: StateStore, announcer: ChangeAnnouncer?) async throws -> AppliedEvent {
        let event = try store.payload(of: job, StripeEvent.init(job:))
        switch disposition(of: event) {
        case .deauthorization(let account):
            let removed = try await account.asyncMap { try await store.removeLinks(ofAccount: $0) } ?? 0
            return try await StateWriter.save(
                .recorded("forgot \(removed) links of the deauthorized account"), eventID: job.id, to: store, announcer: announcer)
        case .foreignAccount(let account):
            return try await StateWriter.save(
                .recorded("ignored: connected account \(account) is not in STRIPE_ACCOUNTS"), eventID: job.id, to: store, announcer: announcer)
        case .mayChangeState:
            break
        }
        var subject = try await Self.lockedSubject(of: event, in: store)
        var state = StripeDecider.State()
        if let key = subject.entitlementKey { state.entitlement = try await store.entitlement(key) }
        if let key = subject.transactionKey {
            state.transaction = try await store.transaction(.webCheckout, key, environment: PurchaseEnvironment(livemode: event.livemode))
        }
        if let key = subject.replacedEntitlementKey { state.replaced = try await store.entitlement(key) }
        if let key = subject.entitlementKey, Self.mayHaveCompanions(event, key: key, scope: subject.scope) {
            state.companions = try await store.entitlements(keyedUnder: StripeDecider.companionKey(of: key, product: ""))
        }
        if state.transaction == nil, let key = subject.transactionKey {
            subject.paymentIsOutsideTheApp = try await store.link(.stripeOutsidePayment, key, scope: event.scope.prefix) != nil
        }
        // A purchase that names only a user id UserIDRule refuses, and that nothing stored or
        // linked makes anyone's, is recorded and applied as no one (not retried to a dead letter).
        // One already stored (a refund, a dispute of it) is applied as it is.
        if subject.userID == nil, state.entitlement == nil, state.transaction == nil,
            let problem = StripeObjectKind.of(event.object)?.refusedUserID(in: event.object) {
            return try await StateWriter.save(.recorded("ignored: \(problem)"), eventID: job.id, to: store, announcer: announcer)
        }
        return try await StateWriter.save(StripeDecider.decide(event, subject, state), eventID: job.id, to: store, announcer: announcer)
    }

    /// The most times ``lockedSubject(of:in:)`` finds more to lock before it gives up (the event
    /// is retried): each round adds keys that another event's commit linked to the payment.
    static let lockRounds = 4

    /// ``resolvedSubject(of:in:)`` under the locks of everything it names.
    ///
    /// One payment is reached through several ids: its PaymentIntent, its charge, a refund, a
    /// dispute, its invoice. A refund resolved while its payment's first event is still being
    /// applied (in another transaction) sees no stored transaction, so it names the payment only,
    /// not the entitlement the payment is creating. Both lock the payment's key, so the refund waits
    /// for that commit; the subject is then resolved again under the lock, and what it names now
    /// (the entitlement) is locked and loaded too. Without this second look the refund moved the
    /// ledger row and left the access on (issue 36).
    static func lockedSubject(of event: StripeEvent, in store: StateStore) async throws -> StripeDecider.Subject {
        var subject = try await resolvedSubject(of: event, in: store)
        var held: Set<String> = []
        for _ in 0..<lockRounds {
            let wanted = subject.lockKeys
            if wanted.isSubset(of: held) { return subject }
            try await store.lock(wanted.subtracting(held))
            held.formUnion(wanted)
            // Only a subject that found no entitlement can gain one from the commit it waited for;
            // one that named its entitlement (from the object, a link or its stored payment) is
            // complete, and costs no second look.
            guard subject.entitlementKey == nil else { return subject }
            subject = try await resolvedSubject(of: event, in: store)
        }
        guard subject.lockKeys.isSubset(of: held) else {
            throw StateStoreError(reason: "what \(event.type) is about kept changing while it was locked; retried")
        }
        return subject
    }

    /// Whether applying `event` to the subscription entitlement `key` may touch companions
    /// (``StripeDecider/withCompanions(_:_:_:_:)``), so they are loaded: every event about a
    /// subscription's invoices, payments, refunds and disputes (they name the subscription only),
    /// and a subscription object that lists, or listed before this change, more than one item. A
    /// subscription of one item, as most are, costs no lookup.
    static func mayHaveCompanions(_ event: StripeEvent, key: String, scope: StripeScope) -> Bool {
        guard scope.isSubscriptionKey(key) else { return false }
        guard event.object["object"].string == "subscription" else { return true }
        return StripeDecider.items(of: event.object).count > 1 || StripeDecider.items(of: event.previousAttributes).count > 1
    }

    /// ``subject(of:in:)``, with the entitlement of a payment that names none found through its stored transaction.
    static func resolvedSubject(of event: StripeEvent, in store: StateStore) async throws -> StripeDecider.Subject {
        var subject = try await subject(of: event, in: store)
        if subject.entitlementKey == nil, let transactionKey = subject.transactionKey {
            subject.entitlementKey = try await store.entitlementKey(
                ofTransaction: transactionKey, source: .webCheckout, environment: PurchaseEnvironment(livemode: event.livemode))
        }
        return subject
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

extension StripeDecider.Subject {
    /// What applying the event locks: the entitlement and the payment both (a payment's events and
    /// its invoice's name different entitlements while the invoice is unknown), and the entitlement
    /// it replaces; ``StateStore/lock(_:)-(Collection<String>)`` takes them in a fixed order, so
    /// two events that lock the same keys never deadlock.
    var lockKeys: Set<String> {
        Set([entitlementKey, transactionKey, replacedEntitlementKey].compactMap { $0 })
    }
}

extension StripeEvent {
    /// The event a queue row holds.
    init(job: ClaimedJob) throws {
        try self.init(eventID: job.id, body: Data(buffer: job.payload))
    }
}
