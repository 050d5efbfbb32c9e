// SPDX-License-Identifier: Apache-2.0
import Foundation

/// What one balance change asks for, by currency: `{"credits": -20, "gems": 5}`. Every currency
/// moves, or none does (`sluice_adjust_balances`).
public struct BalanceAdjustments: Sendable, Equatable, Codable {
    public let amounts: [String: Int64]

    /// Currencies an app defines: a lower-case letter, then letters, digits or `_`, at most 32
    /// (the `balances.currency` check in sql/0035 is the same rule).
    public static func isCurrency(_ name: String) -> Bool {
        guard let first = name.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first), name.utf8.count <= 32 else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }
    /// The most currencies one change may move.
    public static let mostCurrencies = 50
    /// The largest amount one change may move, either way: far from overflowing a `bigint`.
    public static let largestAmount: Int64 = 1_000_000_000_000

    /// - Throws: ``Problem`` naming what is wrong.
    public init(_ amounts: [String: Int64]) throws {
        guard !amounts.isEmpty else { throw Problem("adjustments must name at least one currency") }
        guard amounts.count <= Self.mostCurrencies else { throw Problem("adjustments may name at most \(Self.mostCurrencies) currencies") }
        for (currency, amount) in amounts.sorted(by: { $0.key < $1.key }) {
            guard Self.isCurrency(currency) else {
                throw Problem("currency \"\(currency.prefix(40))\" must be a lower-case letter then up to 31 letters, digits or _")
            }
            guard amount != 0 else { throw Problem("the adjustment of \(currency) must not be 0") }
            guard amount.magnitude <= Self.largestAmount.magnitude else {
                throw Problem("the adjustment of \(currency) must be at most \(Self.largestAmount) either way")
            }
        }
        self.amounts = amounts
    }

    public init(from decoder: any Decoder) throws {
        try self.init(try decoder.singleValueContainer().decode([String: Int64].self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(amounts)
    }

    /// Why adjustments were refused.
    public struct Problem: Error, Equatable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }
}

/// Why a balance changed; stored as the ledger row's `cause` (its check in sql/0035 lists the same
/// values, tied by `BalanceStoreTests`).
public enum BalanceCause: String, Sendable, Codable, CaseIterable {
    /// `POST /v1/iap/users/{user_id}/balance-transactions`.
    case api
    /// `worker balance adjust`.
    case `operator`
    case purchase, renewal, refund
    case refundReversal = "refund_reversal"
    case expiry
}
