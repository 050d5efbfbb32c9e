// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import Shared

/// Saves a ``Decision`` through a ``StateStore``, inside the job's completion transaction, and
/// announces what it changed.
enum StateWriter {
    /// - Parameter announcer: writes one outgoing event per entitlement or transaction whose
    ///   visible state changed (``EntitlementChange``, ``TransactionChange``); `nil` announces
    ///   nothing (`worker rebuild` announces the rebuilt state once, at its end).
    /// - Returns: what became of the event; its ``AppliedEvent/deliveries`` are counted once the
    ///   store's writes are sent (``StateStore/flush()``).
    @discardableResult
    static func save(_ decision: Decision, eventID: Int64, to store: StateStore, announcer: ChangeAnnouncer? = nil) async throws -> AppliedEvent {
        let now = announcer?.now ?? Date()
        let leeway = announcer?.leeway ?? 0
        var events: [OutgoingEvent] = []
        var newEntitlements: Set<String> = []
        // Entitlements that had a user before this event: their purchases are that user's already.
        var hadUser: Set<String> = []
        // Held with the event's other writes, made in its statement (sluice_write_applied_batch).
        var balanceChanges: [CurrencyGrantDecision.Change] = []
        for entitlement in decision.entitlements {
            let isActive = entitlement.isActive(at: now, leeway: leeway)
            let saved = try await store.save(entitlement, announcedActive: isActive)
            if saved.previous == nil { newEntitlements.insert(entitlement.entityKey) }
            if saved.previous?.userID != nil { hadUser.insert(entitlement.entityKey) }
            guard let announcer,
                  let type = EntitlementChange.type(before: saved.previous, after: entitlement, now: now, leeway: leeway)
            else { continue }
            events.append(announcer.event(type, entitlement: entitlement, id: saved.id, previous: saved.previous))
        }
        for (entitlementKey, user) in decision.newlyLinkedUsers.sorted(by: { $0.key < $1.key }) {
            // Its purchases paid before the user was known are granted now (not on a rebuild; not
            // looked for when no product grants currencies, nor when the entitlement passes from a
            // user to another: each of its rows took the user it had, and was granted then).
            if let announcer, !hadUser.contains(entitlementKey), announcer.products.values.contains(where: { !$0.currencyGrants.isEmpty }) {
                for paid in try await store.paidTransactionsWithoutUser(ofEntitlement: entitlementKey) {
                    let product = paid.productID.flatMap { announcer.products[$0] }
                    let periodEnd = decision.entitlements.first { $0.entityKey == entitlementKey }?.expiresAt
                    balanceChanges += CurrencyGrantDecision.grantOnLinking(paid, user: user, product: product, periodEnd: periodEnd)
                }
            }
            try await store.assignUser(user, toTransactionsOf: entitlementKey)
        }
        // A rebuild (no announcer) replays events already applied: their transfers are kept already.
        for transfer in decision.transfers where announcer != nil {
            try await store.recordTransfer(
                entityKey: transfer.entityKey, from: transfer.fromUser, to: transfer.toUser, cause: transfer.cause,
                transactionID: transfer.transactionID, eventID: eventID)
        }
        for transaction in decision.transactions {
            let saved = try await store.save(transaction, eventID: eventID)
            guard let announcer else { continue }
            if let type = TransactionChange.type(before: saved.previous, after: transaction) {
                events.append(announcer.event(type, transaction: transaction, id: saved.id, previous: saved.previous))
            }
            // The currencies its catalog product grants, taken back, given back (a rebuild, with no
            // announcer, leaves the balances as they are: each change is made once already). Each
            // is announced by the BalanceAnnouncer, in ledger order with the API's.
            let product = transaction.productID.flatMap { announcer.products[$0] }
            let firstPeriod = decision.renews[transaction.providerTransactionID].map { !$0 }
                ?? transaction.entitlementKey.map(newEntitlements.contains) ?? true
            // The period it paid for ends at its own period end, else where its entitlement's does.
            let periodEnd = transaction.periodEnd ?? decision.entitlements.first { $0.entityKey == transaction.entitlementKey }?.expiresAt
            balanceChanges += CurrencyGrantDecision.changes(
                before: saved.previous, after: transaction, product: product, firstPeriod: firstPeriod, periodEnd: periodEnd)
        }
        // In one order, so two events that write the same links (a charge's and its PaymentIntent's)
        // wait for each other instead of deadlocking.
        let links = decision.links.sorted(by: { ($0.kind.rawValue, $0.scope, $0.externalID) < ($1.kind.rawValue, $1.scope, $1.externalID) })
        var applied = AppliedEvent(outcome: decision.outcome, entityKey: decision.entityKey, detail: decision.detail)
        // The links, the record, the events and their deliveries, and the raw notification's: held
        // with the state (``HeldWrites``), sent in its statement; the counts come after it.
        let call = OutgoingEventWriter.call(
            events, record: .init(eventID: eventID, entityKey: decision.entityKey, outcome: decision.outcome, detail: decision.detail),
            rawNotification: announcer?.rawNotification, links: store.linksToSave(links),
            balanceChanges: CurrencyGrantDecision.argument(balanceChanges, causeEventID: eventID))
        if let call { store.writes.hold(call: call.argument, for: eventID) }
        applied.announced = events.map(\.type)
        return applied
    }
}

extension ChangeAnnouncer {
    /// The event announcing that `entitlement` (row `id`) changed from `previous`.
    ///
    /// - Parameter previousIsActive: what `is_active` read before, when not `previous`'s now (the clock's change).
    func event(
        _ type: OutgoingEventType, entitlement: EntitlementState, id: UUID, previous: EntitlementState?, previousIsActive: Bool? = nil
    ) -> OutgoingEvent {
        let body = EntitlementBody(
            StateReader.Entitlement(id: id, state: entitlement), now: now, leeway: leeway, sandboxAccess: sandboxAccess, userID: nil, grants: grants)
        let wasActive = previousIsActive
            ?? previous.map { $0.isActive(at: now, leeway: leeway) && sandboxAccess.grants($0.environment, to: $0.userID) }
        return OutgoingEvent(
            messageID: OutgoingEvent.newMessageID(), type: type, occurredAt: now, orderingKey: entitlement.entityKey,
            entityKey: entitlement.entityKey, provider: EventCause.provider(of: entitlement.source),
            environment: entitlement.environment, userID: entitlement.userID, cause: cause, causeEventID: causeEventID,
            data: .entitlement(body, userID: entitlement.userID, previous: previous, previousIsActive: wasActive))
    }

    /// The event announcing that the ledger row `transaction` (row `id`) changed from `previous`.
    func event(_ type: OutgoingEventType, transaction: TransactionState, id: UUID, previous: TransactionState?) -> OutgoingEvent {
        let key = EntityKey.transaction(source: transaction.source, environment: transaction.environment, id: transaction.providerTransactionID)
        return OutgoingEvent(
            messageID: OutgoingEvent.newMessageID(), type: type, occurredAt: now, orderingKey: key,
            entityKey: transaction.entitlementKey ?? key, provider: EventCause.provider(of: transaction.source),
            environment: transaction.environment, userID: transaction.userID, cause: cause, causeEventID: causeEventID,
            data: .transaction(
                TransactionBody(StateReader.Transaction(id: id, state: transaction)), userID: transaction.userID, previous: previous))
    }
}
