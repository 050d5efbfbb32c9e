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
    }

    /// A new `msg_…` id: 32 hex digits of randomness.
    static func newMessageID() -> String {
        "msg_" + RandomIdentifier.hexDigits()
    }

    /// The body without its leading `{`, for the writer to prefix `{"sequence":N,`.
    func renderedTail() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = try encoder.encode(Envelope(event: self))
        return json.dropFirst()
    }

    private struct Envelope: Encodable {
        let event: OutgoingEvent

        enum CodingKeys: String, CodingKey { case id, type, occurred_at, cause, data }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(event.messageID, forKey: .id)
            try c.encode(event.type.rawValue, forKey: .type)
            try c.encode(event.occurredAt.formatted(.iso8601), forKey: .occurred_at)
            try c.encode(event.cause, forKey: .cause)
            try c.encode(DataMember(payload: event.data), forKey: .data)
        }
    }

    private struct DataMember: Encodable {
        let payload: Payload

        enum CodingKeys: String, CodingKey { case entitlement, transaction, previous }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            switch payload {
            case let .entitlement(body, userID, previous, previousIsActive):
                try c.encode(WithUser(body: body, userID: userID), forKey: .entitlement)
                try c.encode(previous.map { PreviousEntitlement(status: $0.status.rawValue, isActive: previousIsActive ?? false, userID: $0.userID) }, forKey: .previous)
            case let .transaction(body, userID, previous):
                try c.encode(WithUser(body: body, userID: userID), forKey: .transaction)
                try c.encode(previous.map { PreviousTransaction(status: $0.status.rawValue, amountRefunded: $0.amountRefunded) }, forKey: .previous)
            }
        }
    }

    /// A read-API body with the `user_id` it belongs to (the read API is asked by user, so it leaves it out).
    private struct WithUser<Body: Encodable>: Encodable {
        let body: Body
        let userID: String?

        enum CodingKeys: String, CodingKey { case user_id }

        func encode(to encoder: any Encoder) throws {
            try body.encode(to: encoder)
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(userID, forKey: .user_id)
        }
    }

    private struct PreviousEntitlement: Encodable {
        let status: String
        let isActive: Bool
        /// Whose it was: what an `entitlement.transferred` receiver takes the access from.
        let userID: String?
        enum CodingKeys: String, CodingKey { case status, isActive = "is_active", userID = "user_id" }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(status, forKey: .status)
            try c.encode(isActive, forKey: .isActive)
            try c.encode(userID, forKey: .userID)
        }
    }

    private struct PreviousTransaction: Encodable {
        let status: String
        let amountRefunded: Int64?
        enum CodingKeys: String, CodingKey { case status, amountRefunded = "amount_refunded" }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(status, forKey: .status)
            try c.encode(amountRefunded, forKey: .amountRefunded)
        }
    }
}
