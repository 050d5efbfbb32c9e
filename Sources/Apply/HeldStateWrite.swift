// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import Shared

/// An entitlement's or a transaction's save held back in ``HeldWrites``: the row as the save
/// would leave it, with the id it has (or will have, when new).
///
/// A ``StateStore`` holds every save once it knows the row's state before and its id — from its
/// ``PrefetchedRows`` (loaded under its lock, or saved earlier) or from a read locking the row —
/// so nothing else can change the row before the transaction commits.
public enum HeldStateWrite: Sendable, Equatable {
    case entitlement(EntitlementState, id: UUID, announcedActive: Bool)
    /// `eventID`: the queue row whose event made the change, for the status history.
    case transaction(TransactionState, id: UUID, eventID: Int64)
    /// Every transaction of the entitlement `entitlementKey` without a user gets `userID` (a
    /// purchase linked late, ``StateStore/assignUser(_:toTransactionsOf:)``). The held saves it
    /// reaches take the user when it is held (``hold(_:)``); the database's other rows in
    /// `sluice_assign_held_users` (sql/functions/), which leaves the held rows to their last held save.
    case userAssignment(entitlementKey: String, userID: String)

    /// The argument of `sluice_write_batch` (sql/functions/) for `writes`, in order: an object
    /// with the entitlements', the transactions' and the user assignments' rows, each numbered
    /// (`n`) by its place in `writes`; times as microseconds since 2000-01-01, as a bind parameter
    /// sends them.
    public static func argument(_ writes: [HeldStateWrite]) -> String {
        var json = JSONTextWriter()
        json.object { argument in
            argument.member("entitlements") { rows in
                rows.array { array in
                    for (n, write) in writes.enumerated() {
                        if case let .entitlement(state, id, announcedActive) = write {
                            entitlementRow(n: n, id: id, state, announcedActive: announcedActive, to: &array)
                        }
                    }
                }
            }
            argument.member("transactions") { rows in
                rows.array { array in
                    for (n, write) in writes.enumerated() {
                        if case let .transaction(state, id, eventID) = write { transactionRow(n: n, id: id, state, eventID: eventID, to: &array) }
                    }
                }
            }
            argument.member("assignments") { rows in
                rows.array { array in
                    for (n, write) in writes.enumerated() {
                        guard case let .userAssignment(entitlementKey, userID) = write else { continue }
                        array.object { row in
                            row.member("n", n)
                            row.member("entitlement_key", entitlementKey)
                            row.member("user_id", userID)
                        }
                    }
                }
            }
        }
        return json.text
    }

    /// One entitlement row as `sluice_save_held_states` reads it.
    private static func entitlementRow(n: Int, id: UUID, _ e: EntitlementState, announcedActive: Bool, to json: inout JSONTextWriter) {
        json.object { row in
            row.member("n", n)
            row.member("id", id.uuidString)
            row.member("entity_key", e.entityKey)
            row.member("user_id", e.userID)
            row.member("email", e.email)
            row.member("product_id", e.productID)
            row.member("product_type", e.productType.rawValue)
            row.member("source", e.source.rawValue)
            row.member("environment", e.environment.rawValue)
            row.member("status", e.status.rawValue)
            row.member("expires_at_us", e.expiresAt?.postgresMicroseconds)
            row.member("purchased_at_us", e.purchasedAt?.postgresMicroseconds)
            row.member("will_renew", e.willRenew)
            row.member("is_trial", e.isTrial)
            row.member("trial_ends_at_us", e.trialEndsAt?.postgresMicroseconds)
            row.member("cancelled_at_us", e.cancelledAt?.postgresMicroseconds)
            row.member("grace_period_expires_at_us", e.gracePeriodExpiresAt?.postgresMicroseconds)
            row.member("pending_product_id", e.pendingProductID)
            row.member("offer", e.offer)
            row.member("offer_type", e.offerType)
            row.member("expiration_reason", e.expirationReason?.rawValue)
            row.member("billing_issue_detected_at_us", e.billingIssueDetectedAt?.postgresMicroseconds)
            row.member("ownership", e.ownership?.rawValue)
            row.member("price_increase_status", e.priceIncreaseStatus?.rawValue)
            row.member("renewal_info_signed_at_us", e.renewalInfoSignedAt?.postgresMicroseconds)
            row.member("last_event_time_us", e.lastEventTime?.postgresMicroseconds)
            row.member("announced_active", announcedActive)
        }
    }

    /// One transaction row as `sluice_save_held_states` reads it.
    private static func transactionRow(n: Int, id: UUID, _ t: TransactionState, eventID: Int64, to json: inout JSONTextWriter) {
        json.object { row in
            row.member("n", n)
            row.member("id", id.uuidString)
            row.member("source", t.source.rawValue)
            row.member("environment", t.environment.rawValue)
            row.member("provider_transaction_id", t.providerTransactionID)
            row.member("entitlement_key", t.entitlementKey)
            row.member("user_id", t.userID)
            row.member("product_id", t.productID)
            row.member("product_type", t.productType?.rawValue)
            row.member("status", t.status.rawValue)
            row.member("amount", t.amount)
            row.member("currency", t.currency)
            row.member("purchased_at_us", t.purchasedAt?.postgresMicroseconds)
            row.member("refunded_at_us", t.refundedAt?.postgresMicroseconds)
            row.member("amount_refunded", t.amountRefunded)
            row.member("period_end_us", t.periodEnd?.postgresMicroseconds)
            row.member("last_event_time_us", t.lastEventTime?.postgresMicroseconds)
            row.member("quantity", t.quantity.map(Int64.init))
            row.member("quantity_refunded", t.quantityRefunded.map(Int64.init))
            row.member("is_trial", t.isTrial)
            row.member("event_id", eventID)
        }
    }
}

extension [HeldStateWrite] {
    /// Appends `write` as the next held write. A user assignment first gives its user to the
    /// held saves it reaches — the entitlement's transactions saved without a user so far — as
    /// the assignment run at once after them would; saves held after it keep their own user.
    public mutating func hold(_ write: HeldStateWrite) {
        if case let .userAssignment(entitlementKey, userID) = write {
            for index in indices {
                guard case .transaction(var state, let id, let eventID) = self[index],
                      state.takeUser(userID, assignedTo: entitlementKey)
                else { continue }
                self[index] = .transaction(state, id: id, eventID: eventID)
            }
        }
        append(write)
    }
}
