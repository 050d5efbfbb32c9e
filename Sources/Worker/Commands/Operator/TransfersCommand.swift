// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import PostgresNIO
import Shared

/// `worker transfers [--user ID] [--limit N] [--json]`: purchases moved from a user to another,
/// newest first — who from and to, when, and what moved them (the sync of which transaction, or
/// an `appAccountToken` registration).
struct TransfersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transfers",
        abstract: "Purchases moved between users (TRANSFER_BEHAVIOR, token registrations), newest first.",
        discussion: OperatorSession.help)

    @Option(help: "Only transfers from or to this user.")
    var user: String?

    @Option(help: "At most this many (1–1000).")
    var limit = 50

    @Flag(help: "Print JSON for scripts.")
    var json = false

    func validate() throws {
        guard (1...1_000).contains(limit) else { throw ValidationError("--limit must be from 1 to 1000") }
    }

    /// A row of `entitlement_transfers`.
    struct Transfer: Encodable, Sendable {
        var transfer: EntitlementTransfer
        var eventID: Int64
        var transferredAt: Date

        enum CodingKeys: String, CodingKey {
            case entity, fromUser = "from_user", toUser = "to_user", cause, transactionID = "transaction_id", eventID = "event_id"
            case transferredAt = "transferred_at"
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(transfer.entityKey, forKey: .entity)
            try c.encode(transfer.fromUser, forKey: .fromUser)
            try c.encode(transfer.toUser, forKey: .toUser)
            try c.encode(transfer.cause, forKey: .cause)
            try c.encode(transfer.transactionID, forKey: .transactionID)
            try c.encode(eventID, forKey: .eventID)
            try c.encode(transferredAt.formatted(.iso8601), forKey: .transferredAt)
        }
    }

    func run() async throws {
        let (user, limit) = (user, limit)
        let transfers = try await OperatorSession.with { client, logger in
            var found: [Transfer] = []
            let rows = try await client.query(
                """
                SELECT entity_key, from_user, to_user, cause, transaction_id, event_id, transferred_at FROM entitlement_transfers
                WHERE \(user)::text IS NULL OR from_user = \(user) OR to_user = \(user)
                ORDER BY transferred_at DESC, id DESC LIMIT \(limit)
                """, logger: logger)
            for try await (entity, from, to, cause, transaction, event, at) in rows.decode((String, String, String, String, String?, Int64, Date).self) {
                let transfer = EntitlementTransfer(entityKey: entity, fromUser: from, toUser: to, cause: cause, transactionID: transaction)
                found.append(Transfer(transfer: transfer, eventID: event, transferredAt: at))
            }
            return found
        }
        if json {
            OperatorSession.show(try OperatorSession.json(["transfers": transfers]))
            return
        }
        var table = TextTable("WHEN", "FROM", "TO", "CAUSE", "ENTITLEMENT")
        for row in transfers {
            let transfer = row.transfer
            let cause = transfer.cause == "sync" ? "sync of \(transfer.transactionID ?? "?")" : transfer.cause
            table.add(row.transferredAt.formatted(.iso8601), transfer.fromUser, transfer.toUser, cause, transfer.entityKey)
        }
        OperatorSession.show(transfers.isEmpty ? "no transfers" : table.rendered)
    }
}
