// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// One row of the balance ledger, as the API and `worker customer` show it.
public struct BalanceTransaction: Sendable, Equatable, Encodable {
    public var id: UUID
    public var userID: String
    /// What was asked.
    public var adjustments: [String: Int64]
    /// What was done: less than asked where a take-back met the zero floor.
    public var applied: [String: Int64]
    /// The touched currencies' balances after it.
    public var balances: [String: Int64]
    /// What a take-back could not take, the balance being too low.
    public var shortfall: [String: Int64]?
    public var cause: BalanceCause
    public var reason: String?
    public var metadata: [String: String]?
    /// Who made an operator's adjustment.
    public var actor: String?
    public var createdAt: Date
    /// When what a grant of a subscription period added expires, if it does (what is not spent by
    /// then is taken by a later row of cause `expiry`).
    public var expiresAt: Date?

    /// Every key, `null` for what is not there (a fixed shape), sorted; the id in lower case and
    /// the time in RFC 3339: the one shape of a ledger row, in the API, the CLI's JSON and
    /// `balance.changed` events.
    public var members: [JSONTextMember] {
        func amounts(_ values: [String: Int64]) -> JSONTextMember.Value {
            .object(JSONTextMember.sorted(values.map { JSONTextMember($0.key, $0.value) }))
        }
        return JSONTextMember.sorted([
            JSONTextMember("actor", actor), JSONTextMember("adjustments", amounts(adjustments)), JSONTextMember("applied", amounts(applied)),
            JSONTextMember("balances", amounts(balances)), JSONTextMember("cause", cause.rawValue),
            JSONTextMember("created_at", createdAt.formatted(.iso8601)), JSONTextMember("expires_at", expiresAt.map { $0.formatted(.iso8601) }),
            JSONTextMember("id", id.uuidString.lowercased()),
            JSONTextMember("metadata", metadata.map { .object(JSONTextMember.sorted($0.map { JSONTextMember($0.key, $0.value) })) } ?? .null),
            JSONTextMember("reason", reason), JSONTextMember("shortfall", shortfall.map(amounts) ?? .null), JSONTextMember("user_id", userID),
        ])
    }

    public func encode(to encoder: any Encoder) throws {
        try JSONTextMember.encode(members, to: encoder)
    }
}
