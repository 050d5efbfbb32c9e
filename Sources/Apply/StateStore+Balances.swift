// SPDX-License-Identifier: Apache-2.0
public import Shared

extension StateStore {
    /// Makes a currency grant's change (``CurrencyGrantDecision``) on this store's transaction, so
    /// that it commits with the purchase or refund it comes from; the held writes are sent first.
    ///
    /// - Returns: what `sluice_adjust_balances` did; `nil` for a take-back or give-back of
    ///   nothing (the purchase granted nothing).
    public func change(_ change: CurrencyGrantDecision.Change) async throws -> BalanceStore.Outcome? {
        try await flush()
        let balances = BalanceStore(connection: connection, logger: logger)
        switch change {
        case let .grant(user, amounts, cause, key):
            return try await balances.adjust(user: user, try BalanceAdjustments(amounts), cause: cause, key: key, digest: nil)
        case let .takeBack(grantKey, numerator, denominator, key):
            return try await balances.reverse(grantKey, numerator: numerator, denominator: denominator, cause: .refund, key: key, floor: true)
        case let .giveBack(takeBackKey, key):
            return try await balances.reverse(takeBackKey, cause: .refundReversal, key: key, floor: false)
        }
    }
}
