// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import Logging
import PostgresNIO
import Shared

/// Applies stored Google Play purchase states (`play_purchase`): decode, find the entitlement (the
/// token's own, else the one of the token it replaced), lock it, load, decide (``PlayDecider``),
/// save, and record an acknowledgement Google still waits for — one transaction.
struct PlayPurchaseHandler: BatchableJobHandler {
    let logger: Logger
    /// Where applied changes are announced; `nil` sends nothing.
    var outbox: ForwardOutbox?

    func applyAnnouncing(_ job: ClaimedJob, in store: StateStore) async throws -> AppliedEvent {
        let event = try store.payload(of: job, Self.decode)
        let announcer = await outbox?.announcer(for: job, logger: logger)
        return try await apply(event, job: job, in: store, announcer: announcer)
    }

    func didCommit(_ job: ClaimedJob, _ applied: AppliedEvent) {
        applied.didCommit(job, outbox: outbox, logger: logger)
    }

    /// Applies the event inside the caller's transaction on `connection` (`worker rebuild`'s),
    /// without announcing or recording acknowledgements.
    func apply(_ job: ClaimedJob, on connection: PostgresConnection) async throws {
        let store = StateStore(connection: connection, logger: logger)
        _ = try await apply(try Self.decode(job), job: job, in: store, announcer: nil)
        try await store.flush()
    }

    private func apply(_ event: PlayDecider.Event, job: ClaimedJob, in store: StateStore, announcer: ChangeAnnouncer?) async throws -> AppliedEvent {
        let environment = event.environment
        let scope = PlayDecider.linkScope(environment)
        let token = event.record.purchaseToken
        let own = try await store.link(.playPurchaseToken, token, scope: scope)
        var entityKey = own?.entitlementKey
        if entityKey == nil, let linked = event.subscription?.linkedPurchaseToken {
            entityKey = try await store.link(.playPurchaseToken, linked, scope: scope)?.entitlementKey
        }
        let key = entityKey ?? EntityKey.play(purchaseToken: token, environment: environment).text
        try await store.lock(key)
        let entitlement = try await store.entitlement(key)
        let orderID = event.record.voided?.orderId ?? Self.orderID(event)
        let state = PlayDecider.State(
            entityKey: key, entitlement: entitlement,
            transaction: try await orderID.asyncMap { try await store.transaction(.playStore, $0, environment: environment) },
            userID: Self.signedUser(event) ?? event.record.userID ?? own?.userID ?? entitlement?.userID,
            replacedBy: try await store.link(.playReplacedToken, token, scope: scope)?.transactionKey)
        let decision = PlayDecider.decide(event, state)
        let applied = try await StateWriter.save(decision, eventID: job.id, to: store, announcer: announcer)
        if announcer != nil, decision.outcome == .applied, let owed = PlayAcknowledgements.owed(event, entitlementKey: key) {
            try await PlayAcknowledgements.record(owed, in: store)
        }
        return applied
    }

    /// The order a state names: the longest-running line item's latest, or the one-time purchase's.
    static func orderID(_ event: PlayDecider.Event) -> String? {
        if let subscription = event.subscription {
            let item = (subscription.lineItems ?? []).max {
                (PlayDecider.date($0.expiryTime) ?? .distantPast) < (PlayDecider.date($1.expiryTime) ?? .distantPast)
            }
            return item?.latestSuccessfulOrderId ?? subscription.latestOrderId
        }
        return event.product?.orderId
    }

    /// `obfuscatedExternalAccountId`, which the app set to its user (as `appAccountToken` is for Apple).
    static func signedUser(_ event: PlayDecider.Event) -> String? {
        let id = event.subscription?.externalAccountIdentifiers?.obfuscatedExternalAccountId ?? event.product?.obfuscatedExternalAccountId
        return id.flatMap { $0.isEmpty ? nil : $0 }
    }

    static func decode(_ job: ClaimedJob) throws -> PlayDecider.Event {
        let (record, subscription, product) = try PlayPurchaseRecord.decode(job.payload)
        return PlayDecider.Event(eventID: job.id, time: record.fetchedAt, record: record, subscription: subscription, product: product)
    }
}
