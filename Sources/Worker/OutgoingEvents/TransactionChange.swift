// SPDX-License-Identifier: Apache-2.0
import Shared

/// Which ledger event, if any, announces that a transaction went from `before` to `after`: a pure
/// decision, tested as a table (`TransactionChangeTests`).
///
/// The ledger announces money that moved: a payment that succeeded, a refund (full, or a larger
/// partial `amount_refunded`), a dispute opened and closed. Pending, processing and failed
/// payments move no money and are not announced.
enum TransactionChange {
    static func type(before: TransactionState?, after: TransactionState) -> OutgoingEventType? {
        let previous = before?.status
        if previous == .disputed, after.status != .disputed { return .transactionDisputeClosed }
        if previous != after.status {
            switch after.status {
            case .succeeded: return .transactionSucceeded
            case .refunded: return .transactionRefunded
            case .disputed: return .transactionDisputed
            case .pending, .processing, .failed: return nil
            }
        }
        // Refunded in part, further: more money (Stripe, Apple's prorated refund), or more of a
        // purchase of several while it stands (Google Play's quantity-based refund, which names no
        // amount; a state read after a full void counts all of them refunded, announced already).
        if (after.amountRefunded ?? 0) > (before?.amountRefunded ?? 0) { return .transactionRefunded }
        if after.status == .succeeded, (after.quantityRefunded ?? 0) > (before?.quantityRefunded ?? 0) { return .transactionRefunded }
        return nil
    }
}
