// SPDX-License-Identifier: Apache-2.0
import Shared

/// What a handler decided an event does: the records it writes and how the event is recorded.
///
/// Decisions are pure values made from the loaded state and the event, so they are tested
/// without a database; ``StateWriter`` saves them.
struct Decision: Sendable, Equatable {
    var outcome: EventOutcome
    /// The entity the event was about, for `applied_events`.
    var entityKey: String?
    var entitlements: [EntitlementState] = []
    var transactions: [TransactionState] = []
    var links: [ProviderLink] = []
    /// Entitlements that learned their user with this event: their earlier transactions get it too.
    var newlyLinkedUsers: [String: String] = [:]
    /// Purchases this event moved from a user to another, for `entitlement_transfers`.
    var transfers: [EntitlementTransfer] = []
    /// Whether a payment of ``transactions`` renews its subscription (`true`: an automatic charge
    /// for the next period) or is the customer's purchase (`false`: the first, or a plan change),
    /// by provider transaction id, where the event says so (``StripeBillingReason``; a checkout's
    /// payment is the purchase): a currency grant's cause. Where it does not, a payment is the
    /// purchase when this event made its entitlement, and a renewal of one that was there.
    var renews: [String: Bool] = [:]
    /// Why it was recorded or stale.
    var detail: String?

    static func recorded(_ detail: String, entityKey: String? = nil) -> Decision {
        Decision(outcome: .recorded, entityKey: entityKey, detail: detail)
    }

    static func stale(_ entityKey: String, newest: String) -> Decision {
        Decision(outcome: .stale, entityKey: entityKey, detail: "older than the state's newest event (\(newest))")
    }
}

/// The event names no user or product that it can be linked to yet; retried, then dead-lettered.
struct Unlinked: Error, CustomStringConvertible {
    var reason: String
    var description: String { "unlinked: \(reason)" }
}
