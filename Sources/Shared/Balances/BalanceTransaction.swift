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

    enum CodingKeys: String, CodingKey {
        case id, userID = "user_id", adjustments, applied, balances, shortfall, cause, reason, metadata, actor, createdAt = "created_at"
    }

    /// Every key, `null` for what is not there (a fixed shape); the id in lower case and the time in
    /// RFC 3339, as the read API writes them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.uuidString.lowercased(), forKey: .id)
        try container.encode(userID, forKey: .userID)
        try container.encode(adjustments, forKey: .adjustments)
        try container.encode(applied, forKey: .applied)
        try container.encode(balances, forKey: .balances)
        try container.encode(shortfall, forKey: .shortfall)
        try container.encode(cause, forKey: .cause)
        try container.encode(reason, forKey: .reason)
        try container.encode(metadata, forKey: .metadata)
        try container.encode(actor, forKey: .actor)
        try container.encode(createdAt.formatted(.iso8601), forKey: .createdAt)
    }
}
