// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import Logging
import NIOFoundationCompat
import PostgresNIO
import Shared

/// Applies a registered `appAccountToken` (source `account`, ``AppAccountTokens``): the worker
/// records the token as the user's (`app_account_token_owners`, the only place the worker learns
/// it from, so only a proven registration counts), and everything stored under the token before —
/// entitlements, transactions, links — becomes the user's, in one transaction; each entitlement
/// that moved is announced (`entitlement.transferred`, cause origin `registration`).
///
/// Apple events applied after this follow the token themselves
/// (``StateStore/userFollowingAppAccountToken(_:)``); this moves what came before.
struct AppAccountTokenHandler: BatchableJobHandler {
    let logger: Logger
    /// Where the moves are announced; `nil` announces nothing.
    var outbox: ForwardOutbox?

    func applyAnnouncing(_ job: ClaimedJob, in store: StateStore) async throws -> AppliedEvent {
        try await Self.move(try Self.decode(job), eventID: job.id, store: store, announcer: await outbox?.announcer(for: job, logger: logger))
    }

    func didCommit(_ job: ClaimedJob, _ applied: AppliedEvent) {
        applied.didCommit(job, outbox: outbox, logger: logger)
    }

    static func decode(_ job: ClaimedJob) throws -> AppAccountTokens.RegisteredEvent {
        do {
            return try JSONDecoder().decode(AppAccountTokens.RegisteredEvent.self, from: Data(buffer: job.payload))
        } catch {
            throw Rejection(.malformed, "the registration event is not {\"app_account_token\": \"<UUID>\", \"user_id\": \"…\"}")
        }
    }

    /// A purchase was stored under the token, by an event whose locks are still held, between
    /// reading the token's entitlements and taking the token's lock: the registration is tried
    /// again (waiting for those locks while holding the token's could deadlock).
    struct TokenChangedMeanwhile: Error, CustomStringConvertible {
        var description: String { "a purchase under the appAccountToken changed while its registration was applied; retried" }
    }

    /// Locks the token's entitlements in key order (the order every handler takes keys in), then
    /// the token (as an Apple event takes its entitlement's lock, then the token's: the same order,
    /// so the two never wait on each other in a cycle), records the owner, re-reads each
    /// entitlement under its lock and saves it under the user.
    static func move(
        _ registration: AppAccountTokens.RegisteredEvent, eventID: Int64, store: StateStore, announcer: ChangeAnnouncer?
    ) async throws -> AppliedEvent {
        let token = registration.tokenText
        var keys = try await store.entitlementKeys(ofUser: token)
        try await store.lock(keys)
        let owner = try await store.recordAppAccountTokenOwner(registration.appAccountToken, userID: registration.userID, eventID: eventID)
        guard owner == registration.userID else {
            var refused = Decision(outcome: .recorded)
            refused.detail = "appAccountToken registration not applied: the token is another user's"
            return try await StateWriter.save(refused, eventID: eventID, to: store, announcer: announcer)
        }
        // What was stored under the token before its lock was taken, by events that committed meanwhile.
        let stored = try await store.entitlementKeys(ofUser: token)
        let added = stored.filter { !keys.contains($0) }
        if !added.isEmpty {
            guard try await store.tryLock(added) else { throw TokenChangedMeanwhile() }
            keys = stored
        }
        var decision = Decision(outcome: .applied)
        for key in keys {
            // Re-read under the lock: an event applied meanwhile may have moved it already.
            guard var entitlement = try await store.entitlement(key), entitlement.userID == token else { continue }
            entitlement.userID = registration.userID
            decision.entitlements.append(entitlement)
            decision.transfers.append(EntitlementTransfer(entityKey: key, fromUser: token, toUser: registration.userID, cause: "registration"))
        }
        try await store.reassignTransactionsAndLinks(of: token, to: registration.userID)
        if decision.entitlements.isEmpty {
            decision.outcome = .recorded
            decision.detail = "appAccountToken registered: nothing was stored under it"
        } else {
            decision.detail = "appAccountToken registered: \(decision.entitlements.count) entitlements moved to its user"
        }
        return try await StateWriter.save(decision, eventID: eventID, to: store, announcer: announcer)
    }
}
