// SPDX-License-Identifier: Apache-2.0
import PostgresNIO
public import Shared

extension StateStore {
    /// Makes a currency grant's change (``CurrencyGrantDecision``) on this store's transaction, so
    /// that it commits with the purchase or refund it comes from; the held writes are sent first.
    ///
    /// A row made now names `eventID` as its cause, for its `balance.changed` announcement.
    ///
    /// - Returns: what `sluice_adjust_balances` did; `nil` for a take-back or give-back of
    ///   nothing (the purchase granted nothing).
    public func change(_ change: CurrencyGrantDecision.Change, eventID: Int64) async throws -> BalanceStore.Outcome? {
        try await flush()
        let balances = BalanceStore(connection: connection, logger: logger)
        let outcome: BalanceStore.Outcome?
        switch change {
        case let .grant(user, amounts, cause, key):
            outcome = try await balances.adjust(user: user, try BalanceAdjustments(amounts), cause: cause, key: key, digest: nil)
        case let .takeBack(grantKey, numerator, denominator, key):
            outcome = try await balances.reverse(grantKey, numerator: numerator, denominator: denominator, cause: .refund, key: key, floor: true)
        case let .giveBack(takeBackKey, key):
            outcome = try await balances.reverse(takeBackKey, cause: .refundReversal, key: key, floor: false)
        }
        if case .applied(let row)? = outcome {
            try await connection.query("UPDATE balance_transactions SET cause_event_id = \(eventID) WHERE id = \(row.id)", logger: logger)
        }
        return outcome
    }
}
