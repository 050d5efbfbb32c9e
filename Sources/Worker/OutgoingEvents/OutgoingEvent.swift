// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// One event to announce, before it is numbered: what changed, what it was before, and why.
///
/// Its body is the JSON every endpoint receives (docs/webhooks.md): `sequence` first, then the
/// other members with sorted keys. The sequence is taken by the database in the statement that
/// stores the event (``OutgoingEventWriter``), so the body is rendered here without it.
struct OutgoingEvent: Sendable {
    var messageID: String
    var type: OutgoingEventType
    var occurredAt: Date
    /// The entitlement the event is about; for a transaction event, its ledger row's key.
    var orderingKey: String
    var entityKey: String
    var provider: String
    var environment: PurchaseEnvironment
    var userID: String?
    var cause: EventCause
    /// The queue row applied, when a stored event caused it.
    var causeEventID: Int64?
    var data: Payload

    /// The state after the change and the state before it.
    enum Payload: Sendable {
        case entitlement(EntitlementBody, userID: String?, previous: EntitlementState?, previousIsActive: Bool?)
        case transaction(TransactionBody, userID: String?, previous: TransactionState?)
        /// The ledger row of the change, and the provider's transaction whose purchase or refund
        /// made it (`nil` for the API's and operators').
        case balance(BalanceTransaction, transactionID: String?)
    }

    /// A new `msg_…` id: 32 hex digits of randomness.
    static func newMessageID() -> String {
        "msg_" + RandomIdentifier.hexDigits()
    }

    /// The body without its leading `{`, for the writer to prefix `{"sequence":N,`: every object's
    /// members sorted by key (docs/webhooks.md), written at once (``JSONTextWriter``).
    func renderedTail() -> Data {
        var json = JSONTextWriter()
        json.object(bodyMembers)
        return Data(json.text.utf8.dropFirst())
    }

    /// The body's members but `sequence`, each object's sorted by key.
    var bodyMembers: [JSONTextMember] {
        [
            JSONTextMember("cause", .object(JSONTextMember.sorted(cause.members))),
            JSONTextMember("data", .object(dataMembers)),
            JSONTextMember("id", messageID),
            JSONTextMember("occurred_at", occurredAt.formatted(.iso8601)),
            JSONTextMember("type", type.rawValue),
        ]
    }

    /// `data`: the state after the change, in the read API's shape plus the `user_id` it belongs
    /// to (the read API is asked by user, so it leaves it out), and `previous`, in key order.
    private var dataMembers: [JSONTextMember] {
        switch data {
        case let .entitlement(body, userID, previous, previousIsActive):
            // Whose it was: what an `entitlement.transferred` receiver takes the access from.
            let before = previous.map {
                JSONTextMember.Value.object([
                    JSONTextMember("is_active", previousIsActive ?? false), JSONTextMember("status", $0.status.rawValue),
                    JSONTextMember("user_id", $0.userID),
                ])
            }
            return [
                JSONTextMember("entitlement", .object(JSONTextMember.sorted(body.members + [JSONTextMember("user_id", userID)]))),
                JSONTextMember("previous", before ?? .null),
            ]
        case let .transaction(body, userID, previous):
            let before = previous.map {
                JSONTextMember.Value.object([
                    JSONTextMember("amount_refunded", $0.amountRefunded), JSONTextMember("quantity_refunded", $0.quantityRefunded.map(Int64.init)),
                    JSONTextMember("status", $0.status.rawValue),
                ])
            }
            return [
                JSONTextMember("previous", before ?? .null),
                JSONTextMember("transaction", .object(JSONTextMember.sorted(body.members + [JSONTextMember("user_id", userID)]))),
            ]
        case let .balance(row, transactionID):
            return [JSONTextMember("balance_transaction", .object(row.members)), JSONTextMember("transaction_id", transactionID)]
        }
    }
}
