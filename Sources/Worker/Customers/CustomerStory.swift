// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import Shared

/// A customer's whole story, as `worker customer` prints it and the console shows it: their
/// entitlements as the read API answers now, the ledger, and every stored event that touched them
/// with the decision it produced and the outgoing events and deliveries it caused.
struct CustomerStory: Sendable, Encodable {
    var subject: String
    var entitlements: [EntitlementBody]
    var transactions: [TransactionBody]
    var timeline: [TimelineEntry]
    /// A user's in-app currency balances and their newest ledger rows (docs/credits.md); none for
    /// a purchase with no user.
    var balances: [String: Int64] = [:]
    var balanceTransactions: [BalanceTransaction] = []

    enum CodingKeys: String, CodingKey {
        case subject, entitlements, transactions, timeline, balances, balanceTransactions = "balance_transactions"
    }
}

/// One stored event (or one change the clock made) in a customer's timeline.
struct TimelineEntry: Sendable, Encodable, Equatable {
    /// The queue row (`events/42`); `nil` for a change the clock made.
    var event: String?
    /// The provider's time of the event, else when it was received.
    var time: Date
    var receivedAt: Date?
    /// `stripe`, `apple`, `storekit`; `clock` when no event caused it.
    var source: String
    var type: String
    var subtype: String?
    /// `webhook`, `sync`, `recovery`, `reconciliation`, `rebuild` or `clock`.
    var origin: String
    var entity: String?
    /// `applied`, `stale`, `recorded`; for an event not applied (yet): its queue state (`pending`, `dead`, …).
    var decision: String
    /// Why, when the worker said: a stale event's reason, a sync that moved nothing, the last error.
    var detail: String?
    var outgoing: [OutgoingSummary]

    enum CodingKeys: String, CodingKey {
        case event, time, receivedAt = "received_at", source, type, subtype, origin, entity, decision, detail, outgoing
    }

    /// One outgoing event an entry caused, and where it went.
    struct OutgoingSummary: Sendable, Encodable, Equatable {
        var id: String
        var type: String
        var sequence: Int64
        var deliveries: [DeliverySummary]
    }

    /// One delivery of an outgoing event to an endpoint (`ep_3`).
    struct DeliverySummary: Sendable, Encodable, Equatable {
        var endpoint: String
        var state: String
        var attempts: Int
        var lastError: String?

        enum CodingKeys: String, CodingKey { case endpoint, state, attempts, lastError = "last_error" }

        var text: String { "\(endpoint) \(state)" + (attempts > 1 ? " after \(attempts) attempts" : "") }
    }
}

extension CustomerStory {
    /// Loads the story of `subject`; `nil` when nothing is stored about it.
    ///
    /// - Parameters:
    ///   - leeway, sandboxAccess: as the read API computes `is_active`.
    ///   - limit: the most recent timeline entries and transactions shown.
    ///   - eventProof: `EVENT_SIGNING_KEY`, for which `appAccountToken` registrations count.
    static func load(
        _ subject: CustomerSubject, client: PostgresClient, leeway: TimeInterval, sandboxAccess: SandboxAccess,
        eventProof: EventProof?, limit: Int = 200, now: Date = Date(), logger: Logger
    ) async throws -> CustomerStory? {
        let reader = StateReader(client: client, tokenProof: eventProof, logger: logger)
        let entitlements: [StateReader.Entitlement]
        let transactions: [StateReader.Transaction]
        var userID: String?
        switch subject {
        case .user(let id):
            userID = id
            entitlements = try await reader.entitlements(userID: id, environment: nil)
            transactions = try await reader.transactions(userID: id, environment: nil, limit: limit)
        case .entity(let key):
            entitlements = try await reader.entitlements(entityKeys: [key])
            transactions = try await reader.transactions(entityKeys: [key], limit: limit)
        }
        let keys = Set(entitlements.map(\.state.entityKey)).union(transactions.compactMap(\.state.entitlementKey)).sorted()
        let ledger = BalanceStore(client: client, logger: logger)
        var balances: [String: Int64] = [:]
        var balanceTransactions: [BalanceTransaction] = []
        if let userID {
            balances = try await ledger.balances(user: userID)
            balanceTransactions = try await ledger.history(user: userID, limit: min(limit, 100))
        }
        guard !keys.isEmpty || !balanceTransactions.isEmpty else { return nil }
        let grants = AccessLevels.grants(of: try await reader.catalog())
        let timeline = try await TimelineReader(client: client, logger: logger).timeline(entityKeys: keys, limit: limit)
        return CustomerStory(
            subject: subject.reference,
            entitlements: entitlements.map {
                EntitlementBody($0, now: now, leeway: leeway, sandboxAccess: sandboxAccess, userID: userID, grants: grants)
            },
            transactions: transactions.map(TransactionBody.init),
            timeline: timeline, balances: balances, balanceTransactions: balanceTransactions)
    }
}
