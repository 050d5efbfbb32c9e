// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared

/// Applies stored App Store Server Notifications (`apple`) and synced StoreKit transactions
/// (`storekit`): decode, lock the `originalTransactionId`, load, decide (``AppleDecider``), save,
/// record, create its forwards and complete — one transaction.
struct AppleEventHandler: BatchableJobHandler {
    let logger: Logger
    /// Where applied changes are announced and notifications (not StoreKit syncs) forwarded;
    /// `nil` sends nothing.
    var outbox: ForwardOutbox?
    /// `TRANSFER_BEHAVIOR`: what a sync does with a purchase linked to another user.
    var transferBehavior: TransferBehavior = .transfer
    /// `ENTITLEMENT_LEEWAY_SECONDS`, for whether a purchase still gives its user access.
    var leeway: TimeInterval = 0

    func applyAnnouncing(_ job: ClaimedJob, in store: StateStore) async throws -> AppliedEvent {
        let (event, syncedUser) = try store.payload(of: job, Self.decode)
        // Apple's notifications are forwarded; syncs and reconciliation events are Sluice's own.
        let isNotification = job.kind == EventSource.apple.rawValue && event.type != .subscriptionStatus
        let announcer = await outbox?.announcer(for: job, rawNotification: isNotification ? event.environment : nil, logger: logger)
        return try await apply(event, syncedUser: syncedUser, job: job, in: store, announcer: announcer)
    }

    func didCommit(_ job: ClaimedJob, _ applied: AppliedEvent) {
        applied.didCommit(job, outbox: outbox, logger: logger)
    }

    /// Applies the event inside the caller's transaction on `connection` (`worker rebuild`'s), without forwarding.
    func apply(_ job: ClaimedJob, on connection: PostgresConnection) async throws {
        let (event, syncedUser) = try Self.decode(job)
        let store = StateStore(connection: connection, logger: logger)
        _ = try await apply(event, syncedUser: syncedUser, job: job, in: store, announcer: nil)
        try await store.flush()
    }

    /// The link of the purchase's `originalTransactionId`, which names its user when the event does not.
    func linksToPrefetch(for job: ClaimedJob, in store: StateStore) -> [PrefetchedRows.LinkKey] {
        guard let (event, _) = try? store.payload(of: job, Self.decode), let tx = event.transaction else { return [] }
        return [.init(.appleOriginalTransaction, tx.originalTransactionId ?? tx.transactionId, scope: AppleDecider.linkScope(event.environment))]
    }

    /// The purchase's lock and entitlement, the transaction's ledger row, and the registered
    /// `appAccountToken` the event or sync names.
    func rowsToPrefetch(for job: ClaimedJob, in store: StateStore) async throws -> PrefetchedRows.Plan {
        guard let (event, syncedUser) = try? store.payload(of: job, Self.decode), let tx = event.transaction else { return .init() }
        let key = AppleDecider.entityKey(originalTransactionID: tx.originalTransactionId ?? tx.transactionId, environment: event.environment)
        let users = [tx.appAccountToken, syncedUser].compactMap { $0 }
        return PrefetchedRows.Plan(
            lockKeys: [key], entitlementKeys: [key], transactionKeys: [.init(.storeKit, tx.transactionId, environment: event.environment)],
            appAccountTokens: Set(users.compactMap(UUID.init(uuidString:))))
    }

    private func apply(
        _ event: AppleDecider.Event, syncedUser: String?, job: ClaimedJob, in store: StateStore, announcer: ChangeAnnouncer?
    ) async throws -> AppliedEvent {
        guard let tx = event.transaction else {
            return try await StateWriter.save(.recorded("\(event.type) carries no transaction"), eventID: job.id, to: store, announcer: announcer)
        }
        let originalID = tx.originalTransactionId ?? tx.transactionId
        let key = AppleDecider.entityKey(originalTransactionID: originalID, environment: event.environment)
        try await store.lock(key)
        let entitlement = try await store.entitlement(key)
        // The signed appAccountToken decides; else the user a sync names (as TRANSFER_BEHAVIOR
        // allows, when the purchase is another user's); else whom the purchase is linked to. A
        // token the app's server registered is followed to its user.
        let signedUser = tx.appAccountToken.flatMap { $0.isEmpty ? nil : $0.lowercased() }
        var user = signedUser ?? syncedUser
        if user == nil {
            user = try await store.link(.appleOriginalTransaction, originalID, scope: AppleDecider.linkScope(event.environment))?.userID
        }
        var userID = try await store.userFollowingAppAccountToken(user ?? entitlement?.userID)
        var transfer: EntitlementTransfer?
        var keptBecause: String?
        if signedUser == nil, syncedUser != nil, let userID = userID, let entitlement,
           let holder = try await store.userFollowingAppAccountToken(entitlement.userID), holder != userID {
            switch event.viaReceipt
                ? .keep("found through a StoreKit 1 receipt, whose signature nothing checks: it moves no purchase from its user")
                : transferBehavior.verdict(
                    signedAt: event.time, newestEvent: entitlement.lastEventTime,
                    holderIsActive: entitlement.isActive(at: Date(), leeway: leeway)) {
            case .move:
                transfer = EntitlementTransfer(entityKey: key, fromUser: holder, toUser: userID, cause: "sync", transactionID: tx.transactionId)
            case .keep(let reason):
                keptBecause = reason
            }
        }
        if keptBecause != nil { userID = try await store.userFollowingAppAccountToken(entitlement?.userID) }
        let state = AppleDecider.State(
            entitlement: entitlement,
            transaction: try await store.transaction(.storeKit, tx.transactionId, environment: event.environment),
            userID: userID)
        var decision = AppleDecider.decide(event, state)
        if let transfer, decision.entitlements.contains(where: { $0.entityKey == key && $0.userID == transfer.toUser }) {
            decision.transfers = [transfer]
        }
        if let keptBecause {
            decision.detail = [decision.detail, "kept with its user, not moved to the syncing one: \(keptBecause)"].compactMap { $0 }.joined(separator: "; ")
        }
        // A refund request Apple asks about: kept, for the responder to answer (not on a rebuild).
        if event.type == .consumptionRequest, announcer != nil {
            try await ConsumptionRequests.record(event, transaction: tx, entitlementKey: key, in: store)
        }
        return try await StateWriter.save(decision, eventID: job.id, to: store, announcer: announcer)
    }

    /// The decoded event, and the user a StoreKit sync named.
    ///
    /// What a row is comes from its `source`, `type` and `origin` columns, never from the shape of
    /// its payload: a subscription status is one the worker's reconciliation stored.
    static func decode(_ job: ClaimedJob) throws -> (AppleDecider.Event, String?) {
        let body = Data(buffer: job.payload)
        if job.kind == EventSource.storekit.rawValue {
            let (transaction, user, viaReceipt) = try AppleSignedPayloadDecoder.storeKitSync(body: body)
            var event = AppleDecider.Event(
                eventID: job.id, type: .storeKitTransaction, time: transaction.signedDate ?? Date(),
                environment: try environment(transaction.environment), transaction: transaction)
            event.viaReceipt = viaReceipt
            return (event, user)
        }
        if job.eventType == AppleNotificationVerifier.subscriptionStatusEventType {
            guard job.origin == EventOrigin.reconciliation.rawValue,
                  let status = try AppleSignedPayloadDecoder.subscriptionStatus(body: body)
            else {
                throw Rejection(.malformed, "a subscription status row must be the reconciliation's, with its status body")
            }
            let time = [status.transaction.signedDate, status.renewal?.signedDate].compactMap { $0 }.max() ?? Date()
            let event = AppleDecider.Event(
                eventID: job.id, type: .subscriptionStatus,
                subtype: AppleSubscriptionStatus(rawValue: status.status).map { AppleSubtype(rawValue: $0.name) }, time: time,
                environment: try environment(status.environment), transaction: status.transaction, renewal: status.renewal)
            return (event, nil)
        }
        let (notification, transaction, renewal) = try AppleSignedPayloadDecoder.notification(body: body)
        let event = AppleDecider.Event(
            eventID: job.id, type: AppleNotificationType(rawValue: notification.notificationType),
            subtype: notification.subtype.map(AppleSubtype.init(rawValue:)),
            time: notification.signedDate ?? Date(), environment: try environment(notification.environment ?? transaction?.environment),
            transaction: transaction, renewal: renewal, consumptionRequestReason: notification.data?.consumptionRequestReason)
        return (event, nil)
    }

    /// The environment ingest verified; a stored event without one was stored before it was checked.
    private static func environment(_ apple: String?) throws -> PurchaseEnvironment {
        guard let environment = PurchaseEnvironment(apple: apple) else {
            throw Rejection(.malformed, "the payload's environment is \(apple ?? "missing"), not Production or Sandbox")
        }
        return environment
    }
}
