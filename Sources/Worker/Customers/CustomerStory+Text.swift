// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

extension CustomerStory {
    /// The story for a terminal: three tables.
    var text: String {
        var entitlementTable = TextTable("ENTITLEMENT", "PRODUCT", "ENVIRONMENT", "STATUS", "ACTIVE", "EXPIRES")
        for body in entitlements {
            let state = body.entitlement.state
            entitlementTable.add(
                state.entityKey, state.productID, state.environment.rawValue, state.status.rawValue, body.isActive ? "yes" : "no",
                state.expiresAt.map { $0.formatted(.iso8601) } ?? "-")
        }
        var ledger = TextTable("TRANSACTION", "PRODUCT", "STATUS", "AMOUNT", "PURCHASED")
        for body in transactions {
            let state = body.state
            ledger.add(
                state.providerTransactionID, state.productID ?? "-", state.status.rawValue,
                state.amount.map { "\($0) \(state.currency ?? "")" } ?? "-", state.purchasedAt.map { $0.formatted(.iso8601) } ?? "-")
        }
        var events = TextTable("TIME", "EVENT", "SOURCE", "TYPE", "ORIGIN", "DECISION", "SENT")
        for entry in timeline {
            events.add(
                entry.time.formatted(.iso8601), entry.event ?? "-", entry.source, entry.type + (entry.subtype.map { "/\($0)" } ?? ""),
                entry.origin, entry.decision + (entry.detail.map { " (\($0))" } ?? ""),
                entry.outgoing.map { "\($0.type) #\($0.sequence)" + ($0.deliveries.isEmpty ? "" : " → " + $0.deliveries.map(\.text).joined(separator: ", ")) }
                    .joined(separator: "; "))
        }
        var text = ["customer \(subject)", "", entitlementTable.rendered, "", ledger.rendered]
        if !balanceTransactions.isEmpty || !balances.isEmpty {
            text += ["", BalanceText.balances(balances, user: subject)] + balanceTransactions.map { "  " + BalanceText.row($0) }
        }
        return (text + ["", "timeline, newest first:", events.rendered]).joined(separator: "\n")
    }
}
