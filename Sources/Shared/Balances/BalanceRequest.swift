// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation

/// A spend or deposit as `POST /v1/iap/users/{user_id}/balance-transactions` takes it:
/// `{"adjustments": {"credits": -20}, "reason": "…", "metadata": {"request": "r_1"}}`.
public struct BalanceRequest: Sendable, Equatable, Codable {
    public var adjustments: BalanceAdjustments
    public var reason: String?
    /// Stripe-like metadata: at most 50 keys of up to 40 characters, values up to 500.
    public var metadata: [String: String]?

    public init(adjustments: BalanceAdjustments, reason: String? = nil, metadata: [String: String]? = nil) throws {
        self.adjustments = adjustments
        self.reason = reason
        self.metadata = metadata
        try check()
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        adjustments = try container.decode(BalanceAdjustments.self, forKey: .adjustments)
        reason = try container.decodeIfPresent(String.self, forKey: .reason)
        metadata = try container.decodeIfPresent([String: String].self, forKey: .metadata)
        try check()
    }

    private func check() throws {
        if let reason, reason.count > 500 || UserIDRule.containsControlCharacters(reason) {
            throw BalanceAdjustments.Problem("reason must be at most 500 characters, without control characters")
        }
        if let metadata {
            guard metadata.count <= 50, metadata.allSatisfy({ (1...40).contains($0.key.count) && $0.value.count <= 500 }) else {
                throw BalanceAdjustments.Problem("metadata takes at most 50 keys of 1 to 40 characters, each value at most 500")
            }
        }
    }

    /// SHA-256 of the request in one canonical form (sorted keys): the same request under an
    /// idempotency key is a replay, another is refused.
    public var digest: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding dictionaries of strings and integers cannot fail.
        let data = (try? encoder.encode(self)) ?? Data()
        return Array(SHA256.hash(data: data))
    }
}
