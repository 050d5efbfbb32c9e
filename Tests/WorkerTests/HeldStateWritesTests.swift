// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport
@testable import Worker

/// Entitlement and transaction saves held back in a batch (``HeldStateWrite``,
/// `sluice_save_held_states`): each answers what the save at once answers, and once
/// sent the database holds what the saves one by one leave — the last state of each row under
/// the id announced, and one status history row per change, in order.
@Suite(.timeLimit(.minutes(3)))
struct HeldStateWritesTests {
    static let base = Date(timeIntervalSince1970: 1_790_000_000.654321)

    /// An entitlement and a transaction stored before the batch, then saves of them and of new
    /// rows, several of one row, a status repeated.
    static func seeded(_ key: String) -> EntitlementState {
        var e = EntitlementState(entityKey: key, userID: "user_seeded", productID: "pro", productType: .autoRenewable, source: .storeKit, status: .active)
        e.expiresAt = base.addingTimeInterval(86_400.000_001)
        e.lastEventTime = base
        return e
    }

    static func saves() -> [HeldStateWrite] {
        var renewed = seeded("apple:production:1")
        renewed.expiresAt = base.addingTimeInterval(2 * 86_400 + 0.123_456_7)
        renewed.willRenew = true
        var fresh = seeded("apple:production:2")
        fresh.userID = nil
        fresh.isTrial = true
        fresh.offer = "intro"
        var cancelled = fresh
        cancelled.status = .cancelled
        cancelled.cancelledAt = base.addingTimeInterval(60)
        var paid = TransactionState(source: .webCheckout, providerTransactionID: "pi_new", status: .succeeded)
        paid.entitlementKey = "stripe:production:pi_new"
        paid.amount = 999
        paid.currency = "eur"
        paid.purchasedAt = base
        var refunded = paid
        refunded.status = .refunded
        refunded.refundedAt = base.addingTimeInterval(120)
        refunded.amountRefunded = 999
        var seededAgain = TransactionState(source: .webCheckout, providerTransactionID: "pi_seeded", status: .succeeded)
        seededAgain.amount = 500
        seededAgain.lastEventTime = base.addingTimeInterval(30)
        // Transactions of one entitlement, for the user assignments: saved before the first
        // assignment, after it, and once before and again after.
        let lateKey = "stripe:production:late"
        var before = TransactionState(source: .webCheckout, providerTransactionID: "pi_late_before", status: .succeeded)
        before.entitlementKey = lateKey
        var after = before
        after.providerTransactionID = "pi_late_after"
        var twice = before
        twice.providerTransactionID = "pi_late_twice"
        var twiceRefunded = twice
        twiceRefunded.status = .refunded
        let id = UUID()  // not used: each save names its row below
        return [
            .entitlement(renewed, id: id, announcedActive: true),
            .entitlement(fresh, id: id, announcedActive: true),
            .transaction(paid, id: id, eventID: 11),
            .entitlement(cancelled, id: id, announcedActive: false),
            .transaction(refunded, id: id, eventID: 12),
            .transaction(refunded, id: id, eventID: 13),
            .transaction(seededAgain, id: id, eventID: 14),
            .transaction(before, id: id, eventID: 15),
            .transaction(twice, id: id, eventID: 15),
            .userAssignment(entitlementKey: lateKey, userID: "user_late"),
            // The first assignment counts: the rows it reached have a user now.
            .userAssignment(entitlementKey: lateKey, userID: "user_later"),
            .transaction(after, id: id, eventID: 16),
            .transaction(twiceRefunded, id: id, eventID: 16),
            // Seeded without a user, loaded: its answer shows the assigned user.
            .transaction(seededLate("pi_late_loaded", status: .refunded, userID: "user_late"), id: id, eventID: 17),
        ]
    }

    /// A transaction of the late-linked entitlement stored without a user.
    static func seededLate(_ providerID: String, status: TransactionStatus = .succeeded, userID: String? = nil) -> TransactionState {
        var t = TransactionState(source: .webCheckout, providerTransactionID: providerID, status: status)
        t.entitlementKey = "stripe:production:late"
        t.userID = userID
        return t
    }

    struct Outcome: Sendable, Equatable {
        /// Each save's answer: the state before, and whether the id is the row's id after.
        var answers: [String]
        var entitlements: [String]
        var history: [String]
        var transactionUsers: [String]
    }

    @Test
    func heldSavesAnswerAndLeaveWhatSavesAtOnceDo() async throws {
        let held = try await Self.outcome(holding: true)
        let atOnce = try await Self.outcome(holding: false)
        #expect(held.answers == atOnce.answers)
        #expect(held.entitlements == atOnce.entitlements)
        #expect(held.history == atOnce.history)
        #expect(held.transactionUsers == atOnce.transactionUsers)
        #expect(
            atOnce.transactionUsers == [
                "pi_late_after|", "pi_late_before|user_late", "pi_late_loaded|user_late", "pi_late_owned|user_other",
                "pi_late_twice|", "pi_late_unloaded|user_late", "pi_new|", "pi_seeded|",
            ])
        #expect(
            atOnce.history.count == 11,
            "4 seeded; pi_new succeeded, then refunded once; pi_seeded unchanged; 3 late ones succeeded, 2 refunded: \(atOnce.history)")
    }

    /// A held assignment reaches the held saves before it and only those (``HeldStateWrite``'s
    /// `hold`): a table of what each held transaction's user becomes.
    @Test(arguments: [
        // (the held transaction's entitlement, its user) → its user after the assignment of "e1" to "u1"
        (("e1", nil), "u1"),
        (("e1", "u0"), "u0"),
        (("e2", nil), nil),
        ((nil, nil), nil),
    ] as [((String?, String?), String?)])
    func aHeldAssignmentReachesTheHeldSavesBeforeIt(_ held: (String?, String?), _ expected: String?) {
        var t = TransactionState(source: .storeKit, providerTransactionID: "1", status: .succeeded)
        (t.entitlementKey, t.userID) = held
        var writes: [HeldStateWrite] = []
        writes.hold(.transaction(t, id: UUID(), eventID: 1))
        writes.hold(.userAssignment(entitlementKey: "e1", userID: "u1"))
        var later = t
        later.providerTransactionID = "2"
        writes.hold(.transaction(later, id: UUID(), eventID: 2))
        let users = writes.compactMap { write -> String?? in
            guard case let .transaction(state, _, _) = write else { return nil }
            return .some(state.userID)
        }
        #expect(users == [expected, held.1], "a save held after the assignment keeps its own user")
        #expect(writes.count == 3)
    }

    /// Seeds two rows at once, then makes ``saves()`` in one transaction, held (with the rows
    /// loaded ahead) or at once.
    static func outcome(holding: Bool) async throws -> Outcome {
        try await TestDatabase.with { db in
            try await db.client.withTransaction(logger: TestDatabase.logger) { connection in
                let store = StateStore(connection: connection, logger: TestDatabase.logger)
                try await store.save(seeded("apple:production:1"))
                try await store.save(TransactionState(source: .webCheckout, providerTransactionID: "pi_seeded", status: .succeeded), eventID: 10)
                try await store.save(seededLate("pi_late_loaded"), eventID: 10)
                try await store.save(seededLate("pi_late_unloaded"), eventID: 10)
                try await store.save(seededLate("pi_late_owned", userID: "user_other"), eventID: 10)
                try await store.flush()
            }
            var answers: [(id: UUID, line: String)] = []
            try await db.client.withTransaction(logger: TestDatabase.logger) { connection in
                let store = StateStore(connection: connection, logger: TestDatabase.logger)
                if holding {
                    try await store.prefetch(PrefetchedRows.Plan(
                        entitlementKeys: ["apple:production:1", "apple:production:2"],
                        transactionKeys: Set(["pi_new", "pi_seeded", "pi_late_before", "pi_late_after", "pi_late_twice", "pi_late_loaded"].map {
                            .init(.webCheckout, $0, environment: .production)
                        })))
                }
                for save in saves() {
                    switch save {
                    case let .entitlement(state, _, announcedActive):
                        let saved = try await store.save(state, announcedActive: announcedActive)
                        answers.append((saved.id, "\(state.entityKey) before: \(saved.previous.map { "\($0.status) \($0.expiresAt as Any)" } ?? "none")"))
                    case let .transaction(state, _, eventID):
                        let saved = try await store.save(state, eventID: eventID)
                        let before = saved.previous.map { "\($0.status) \($0.userID ?? "no user")" } ?? "none"
                        answers.append((saved.id, "\(state.providerTransactionID) before: \(before)"))
                    case let .userAssignment(entitlementKey, userID):
                        try await store.assignUser(userID, toTransactionsOf: entitlementKey)
                    }
                    // The reference: each save sent in a statement of its own, at once.
                    if !holding { try await store.flush() }
                }
                if holding {
                    #expect(try await Self.count("transaction_status_history", on: connection) == 4, "held, not sent")
                    try await store.flush()
                }
            }
            let ids = Set(try await db.strings("SELECT id::text FROM entitlements UNION ALL SELECT id::text FROM transactions"))
            return Outcome(
                answers: answers.map { "\($0.line), id \(ids.contains($0.id.uuidString.lowercased()) ? "the row's" : "unknown")" },
                entitlements: try await db.strings(
                    """
                    SELECT concat_ws('|', entity_key, user_id, status, expires_at, will_renew, is_trial, cancelled_at, offer, last_event_time,
                        announced_active) FROM entitlements ORDER BY entity_key
                    """),
                history: try await db.strings(
                    """
                    SELECT concat_ws('|', t.provider_transaction_id, h.status, h.event_id, t.amount, t.amount_refunded, t.refunded_at)
                    FROM transaction_status_history h JOIN transactions t ON t.id = h.transaction_id ORDER BY h.id
                    """),
                transactionUsers: try await db.strings(
                    "SELECT concat(provider_transaction_id, '|', user_id) FROM transactions ORDER BY provider_transaction_id"))
        }
    }

    /// The rows of `table` as the transaction on `connection` sees them.
    static func count(_ table: String, on connection: PostgresConnection) async throws -> Int64 {
        for try await count in try await connection.query("SELECT count(*) FROM \(unescaped: table)", logger: TestDatabase.logger).decode(Int64.self) {
            return count
        }
        return -1
    }

    /// What a statement after a held save does: each reads or writes its row without the batch's
    /// memory, so it must send the held saves first.
    enum FollowingStatement: String, CaseIterable, CustomTestStringConvertible {
        /// A registration finds the user's entitlements: the held new one too.
        case entitlementKeysOfUser
        /// A purchase linked late gives its user to the entitlement's transactions: the held new one too.
        case assignUser

        var testDescription: String { rawValue }
    }

    @Test(arguments: FollowingStatement.allCases)
    func aStatementAfterAHeldSaveSeesIt(_ statement: FollowingStatement) async throws {
        try await TestDatabase.with { db in
            try await db.client.withTransaction(logger: TestDatabase.logger) { connection in
                let store = StateStore(connection: connection, logger: TestDatabase.logger)
                let key = "stripe:production:pi_held"
                try await store.prefetch(PrefetchedRows.Plan(
                    entitlementKeys: [key], transactionKeys: [.init(.webCheckout, "pi_held", environment: .production)]))
                try await store.save(EntitlementState(
                    entityKey: key, userID: "user_held", productID: "pro", productType: .nonConsumable, source: .webCheckout, status: .active))
                var transaction = TransactionState(source: .webCheckout, providerTransactionID: "pi_held", status: .succeeded)
                transaction.entitlementKey = key
                try await store.save(transaction, eventID: 1)
                #expect(try await Self.count("entitlements", on: connection) == 0, "held, not sent")
                switch statement {
                case .entitlementKeysOfUser:
                    #expect(try await store.entitlementKeys(ofUser: "user_held") == [key])
                case .assignUser:
                    // Held too now (`sluice_assign_held_users`): the save it follows must be sent before it.
                    try await store.assignUser("user_late", toTransactionsOf: key)
                    try await store.flush()
                    var users: [String?] = []
                    for try await user in try await connection.query(
                        "SELECT user_id FROM transactions WHERE provider_transaction_id = 'pi_held'", logger: TestDatabase.logger
                    ).decode(String?.self) {
                        users.append(user)
                    }
                    #expect(users == ["user_late"])
                }
            }
        }
    }
}
