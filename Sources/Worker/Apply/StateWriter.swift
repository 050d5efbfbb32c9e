// SPDX-License-Identifier: Apache-2.0
import Shared

/// Saves a ``Decision`` through a ``StateStore``, inside the job's completion transaction.
enum StateWriter {
    static func save(_ decision: Decision, eventID: Int64, to store: StateStore) async throws {
        for entitlement in decision.entitlements {
            try await store.save(entitlement)
        }
        for (entitlementKey, user) in decision.newlyLinkedUsers.sorted(by: { $0.key < $1.key }) {
            try await store.assignUser(user, toTransactionsOf: entitlementKey)
        }
        for transaction in decision.transactions {
            try await store.save(transaction, eventID: eventID)
        }
        // In one order, so two events that write the same links (a charge's and its PaymentIntent's)
        // wait for each other instead of deadlocking.
        for link in decision.links.sorted(by: { ($0.kind.rawValue, $0.scope, $0.externalID) < ($1.kind.rawValue, $1.scope, $1.externalID) }) {
            try await store.save(link)
        }
        try await store.record(eventID: eventID, entityKey: decision.entityKey, outcome: decision.outcome, detail: decision.detail)
    }
}
