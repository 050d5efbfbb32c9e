// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// `/customers`: the search box and, for a query that names several customers, the choice.
struct CustomerSearchPage: ConsolePage {
    static let template = ConsoleTemplate.customers

    struct Match: Sendable {
        /// The subject, form-encoded for the customer page's query string.
        var reference: String
        var label: String
    }

    var query: String
    var searched: Bool
    /// `nil` before a search; empty when nothing is stored about the query.
    var matches: [Match]?
    var hasMatches: Bool

    init(query: String?, subjects: [CustomerSubject]) {
        self.query = query ?? ""
        searched = query != nil
        matches =
            query == nil
            ? nil
            : subjects.map { subject in
                let label: String
                switch subject {
                case .user(let id): label = "user \(id)"
                case .entity(let key): label = "purchase \(key) (no user linked)"
                }
                return Match(reference: String(FormFields.encode([("id", subject.reference)]).dropFirst(3)), label: label)
            }
        hasMatches = subjects.count > 1
    }
}

/// `/customer?id=…`: entitlements with `is_active` and why, the ledger and the timeline
/// (``CustomerStory``, as `worker customer` prints it).
struct CustomerPage: ConsolePage {
    static let template = ConsoleTemplate.customer

    struct EntitlementRow: Sendable {
        var product: String
        var active: String
        var activeClass: String
        var why: String
        var status: String
        var environment: String
        var expires: String
        var entity: String
    }

    struct TransactionRow: Sendable {
        var id: String
        var product: String
        var status: String
        var amount: String
        var purchased: String
    }

    struct TimelineRow: Sendable {
        struct Outgoing: Sendable {
            struct Delivery: Sendable { var text: String }
            var type: String
            var sequence: Int64
            var deliveries: [Delivery]
        }

        var time: String
        var source: String
        var origin: String
        /// The stored event's `queue/id`, linked to its dead-letter page; `nil` for a sync.
        var event: String?
        var type: String
        var subtype: String?
        var decision: String
        var detail: String?
        var outgoing: [Outgoing]
    }

    /// A currency's balance.
    struct BalanceRow: Sendable {
        var currency: String
        var amount: Int64
    }

    /// One ledger row of the balances: what moved, why and by whom.
    struct BalanceChangeRow: Sendable {
        var time: String
        var cause: String
        var moved: String
        var shortfall: String?
        /// When what a grant added expires, if it does.
        var expires: String?
        var reason: String?
        var actor: String?
    }

    /// The customer's reference, posted back by the reconcile and rebuild forms.
    var subject: String
    var balances: [BalanceRow]
    var balanceChanges: [BalanceChangeRow]
    var hasBalances: Bool
    var entitlements: [EntitlementRow]
    var transactions: [TransactionRow]
    var hasTransactions: Bool
    var timeline: [TimelineRow]

    init(_ story: CustomerStory, now: Date) {
        subject = story.subject
        balances = story.balances.sorted { $0.key < $1.key }.map { BalanceRow(currency: $0.key, amount: $0.value) }
        balanceChanges = story.balanceTransactions.map { row in
            BalanceChangeRow(
                time: ConsoleFormat.time(row.createdAt), cause: row.cause.rawValue,
                moved: row.applied.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value > 0 ? "+" : "")\($0.value)" }.joined(separator: ", "),
                shortfall: row.shortfall.map { $0.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ") }?.nonBlank,
                expires: row.expiresAt.map(ConsoleFormat.time), reason: row.reason?.nonBlank, actor: row.actor?.nonBlank)
        }
        hasBalances = !balances.isEmpty || !balanceChanges.isEmpty
        entitlements = story.entitlements.map { body in
            let state = body.entitlement.state
            return EntitlementRow(
                product: state.productID, active: body.isActive ? "active" : "no access", activeClass: body.isActive ? "good" : "bad",
                why: EntitlementExplanation.why(body, now: now), status: state.status.rawValue, environment: state.environment.rawValue,
                expires: ConsoleFormat.time(state.expiresAt), entity: state.entityKey)
        }
        transactions = story.transactions.map { body in
            let state = body.state
            return TransactionRow(
                id: state.providerTransactionID, product: state.productID ?? "–", status: state.status.rawValue,
                amount: ConsoleFormat.amount(state.amount, currency: state.currency), purchased: ConsoleFormat.time(state.purchasedAt))
        }
        hasTransactions = !transactions.isEmpty
        timeline = story.timeline.map { entry in
            TimelineRow(
                time: ConsoleFormat.time(entry.time), source: entry.source, origin: entry.origin, event: entry.event?.nonBlank, type: entry.type,
                subtype: entry.subtype?.nonBlank, decision: entry.decision, detail: entry.detail?.nonBlank,
                outgoing: entry.outgoing.map { out in
                    .init(type: out.type, sequence: out.sequence, deliveries: out.deliveries.map { .init(text: $0.text) })
                })
        }
    }
}

/// What a rebuild would change (dry run), or did, with the button that applies it.
struct RebuildPage: ConsolePage {
    static let template = ConsoleTemplate.rebuild

    struct ChangeRow: Sendable {
        var entity: String
        var events: Int
        var differences: [String]
    }

    var summary: String
    var changes: [ChangeRow]
    var dryRun: Bool
    var anyChange: Bool
    /// The customer's reference, posted again by "Apply this rebuild".
    var subject: String
    var subjectQuery: String

    init(_ changes: [EntityRebuilder.Change], dryRun: Bool, subject: String) {
        let changed = changes.filter { !$0.differences.isEmpty }.count
        summary =
            (dryRun ? "Dry run, nothing changed yet: " : "Done: ") + "\(changes.count) entities, \(changed) " + (dryRun ? "would change." : "changed.")
        self.changes = changes.map { ChangeRow(entity: $0.entityKey, events: $0.events, differences: $0.differences) }
        self.dryRun = dryRun
        anyChange = changed > 0
        self.subject = subject
        subjectQuery = String(FormFields.encode([("id", subject)]).dropFirst(3))
    }
}
