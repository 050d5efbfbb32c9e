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
    /// `TRANSFER_BEHAVIOR`: what an app's sync does with a purchase another user holds.
    var transferBehavior: TransferBehavior = .transfer
    /// `ENTITLEMENT_LEEWAY_SECONDS`, for whether a purchase still gives its user access.
    var leeway: TimeInterval = 0

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
        var event = event
        let token = event.record.purchaseToken
        var own = try await store.link(.playPurchaseToken, token, scope: PlayDecider.linkScope(event.environment))
        // A void carries no purchase to say whether it was a test one: its token's link does.
        if event.record.voided != nil, own == nil,
           let sandbox = try await store.link(.playPurchaseToken, token, scope: PlayDecider.linkScope(.sandbox)) {
            own = sandbox
            event.environmentOverride = .sandbox
        }
        let environment = event.environment
        let scope = PlayDecider.linkScope(environment)
        var entityKey = own?.entitlementKey
        if entityKey == nil, let linked = event.subscription?.linkedPurchaseToken {
            entityKey = try await store.link(.playPurchaseToken, linked, scope: scope)?.entitlementKey
        }
        let key = entityKey ?? EntityKey.play(purchaseToken: token, environment: environment).text
        try await store.lock(key)
        let entitlement = try await store.entitlement(key)
        let orderID = event.record.voided?.orderId ?? Self.orderID(event)
        // The user: the app's signed-in account on the purchase decides; else an app's sync (as
        // TRANSFER_BEHAVIOR allows, when another user holds the purchase); else whom it is linked to.
        let signedUser = Self.signedUser(event)
        let holder = own?.userID ?? entitlement?.userID
        var userID = signedUser ?? event.record.userID ?? holder
        var transfer: EntitlementTransfer?
        var keptBecause: String?
        if signedUser == nil, let synced = event.record.userID, let holder, holder != synced, let entitlement {
            switch transferBehavior.verdict(
                signedAt: event.time, newestEvent: entitlement.lastEventTime, holderIsActive: entitlement.isActive(at: Date(), leeway: leeway)) {
            case .move:
                transfer = EntitlementTransfer(entityKey: key, fromUser: holder, toUser: synced, cause: "sync", transactionID: orderID ?? token)
            case .keep(let reason):
                userID = holder
                keptBecause = reason
            }
        }
        let state = PlayDecider.State(
            entityKey: key, entitlement: entitlement,
            transaction: try await orderID.asyncMap { try await store.transaction(.playStore, $0, environment: environment) },
            userID: userID, joinsChain: own == nil && entityKey != nil,
            replacedBy: try await store.link(.playReplacedToken, token, scope: scope)?.transactionKey)
        var decision = PlayDecider.decide(event, state)
        if let transfer, decision.entitlements.contains(where: { $0.entityKey == key && $0.userID == transfer.toUser }) {
            decision.transfers = [transfer]
        }
        if let keptBecause {
            decision.detail = [decision.detail, "kept with its user, not moved to the syncing one: \(keptBecause)"].compactMap { $0 }.joined(separator: "; ")
        }
        let applied = try await StateWriter.save(decision, eventID: job.id, to: store, announcer: announcer)
        // Owed whatever this row changed (a stale or recorded state of a paid purchase still is),
        // unless a newer token replaced it.
        if announcer != nil, state.replacedBy == nil, let owed = PlayAcknowledgements.owed(event, entitlementKey: key) {
            try await PlayAcknowledgements.record(owed, in: store)
        }
        return applied
    }

    /// The order a state names: the longest-running line item's latest, or the one-time purchase's.
    static func orderID(_ event: PlayDecider.Event) -> String? {
        event.subscription.flatMap(\.orderInForce) ?? event.product?.orderId
    }

    /// `obfuscatedExternalAccountId`, which the app set to its user (as `appAccountToken` is for Apple).
    static func signedUser(_ event: PlayDecider.Event) -> String? {
        let id = event.subscription?.externalAccountIdentifiers?.obfuscatedExternalAccountId ?? event.product?.obfuscatedExternalAccountId
        return id.flatMap { $0.isEmpty ? nil : $0 }
    }

    static func decode(_ job: ClaimedJob) throws -> PlayDecider.Event {
        let (record, subscription, product, order) = try PlayPurchaseRecord.decode(job.payload)
        return PlayDecider.Event(
            eventID: job.id, time: record.fetchedAt, record: record, subscription: subscription, product: product, order: order)
    }
}
