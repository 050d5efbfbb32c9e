// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// An entitlement's or a transaction's save held back by ``PendingWrites``: the row as the save
/// would leave it, with the id it has (or will have, when new).
///
/// A ``StateStore`` holds a save only when its ``PrefetchedRows`` knows the row (loaded with its
/// lock, or saved earlier in the batch): then the state before and the id are known without
/// asking the database, and nothing else can change the row before the batch commits.
public enum HeldStateWrite: Sendable, Equatable {
    case entitlement(EntitlementState, id: UUID, announcedActive: Bool)
    /// `eventID`: the queue row whose event made the change, for the status history.
    case transaction(TransactionState, id: UUID, eventID: Int64)

    /// The argument of `sluice_save_held_states` (sql/0024) for `writes`, in order: an object
    /// with the entitlements' and the transactions' rows, each numbered (`n`) by its place in
    /// `writes`; times as microseconds since 2000-01-01, as a bind parameter sends them.
    public static func argument(_ writes: [HeldStateWrite]) throws -> String {
        var argument = Argument()
        for (n, write) in writes.enumerated() {
            switch write {
            case let .entitlement(state, id, announcedActive):
                argument.entitlements.append(EntitlementRow(n: n, id: id, state, announcedActive: announcedActive))
            case let .transaction(state, id, eventID):
                argument.transactions.append(TransactionRow(n: n, id: id, state, eventID: eventID))
            }
        }
        return String(decoding: try JSONEncoder().encode(argument), as: UTF8.self)
    }

    private struct Argument: Encodable {
        var entitlements: [EntitlementRow] = []
        var transactions: [TransactionRow] = []
    }

    /// One row as `sluice_save_held_states` reads it: the columns of `sluice_save_entitlement` (sql/0018).
    private struct EntitlementRow: Encodable {
        var n: Int
        var id: UUID
        var entity_key: String
        var user_id: String?
        var email: String?
        var product_id: String
        var product_type: String
        var source: String
        var environment: String
        var status: String
        var expires_at_us: Int64?
        var purchased_at_us: Int64?
        var will_renew: Bool?
        var is_trial: Bool
        var trial_ends_at_us: Int64?
        var cancelled_at_us: Int64?
        var grace_period_expires_at_us: Int64?
        var pending_product_id: String?
        var offer: String?
        var offer_type: String?
        var expiration_reason: String?
        var billing_issue_detected_at_us: Int64?
        var ownership: String?
        var price_increase_status: String?
        var renewal_info_signed_at_us: Int64?
        var last_event_time_us: Int64?
        var announced_active: Bool

        init(n: Int, id: UUID, _ e: EntitlementState, announcedActive: Bool) {
            self.n = n
            self.id = id
            entity_key = e.entityKey
            user_id = e.userID
            email = e.email
            product_id = e.productID
            product_type = e.productType.rawValue
            source = e.source.rawValue
            environment = e.environment.rawValue
            status = e.status.rawValue
            expires_at_us = e.expiresAt?.postgresMicroseconds
            purchased_at_us = e.purchasedAt?.postgresMicroseconds
            will_renew = e.willRenew
            is_trial = e.isTrial
            trial_ends_at_us = e.trialEndsAt?.postgresMicroseconds
            cancelled_at_us = e.cancelledAt?.postgresMicroseconds
            grace_period_expires_at_us = e.gracePeriodExpiresAt?.postgresMicroseconds
            pending_product_id = e.pendingProductID
            offer = e.offer
            offer_type = e.offerType
            expiration_reason = e.expirationReason?.rawValue
            billing_issue_detected_at_us = e.billingIssueDetectedAt?.postgresMicroseconds
            ownership = e.ownership?.rawValue
            price_increase_status = e.priceIncreaseStatus?.rawValue
            renewal_info_signed_at_us = e.renewalInfoSignedAt?.postgresMicroseconds
            last_event_time_us = e.lastEventTime?.postgresMicroseconds
            announced_active = announcedActive
        }
    }

    /// One row as `sluice_save_held_states` reads it: the columns of `sluice_save_transaction` (sql/0018).
    private struct TransactionRow: Encodable {
        var n: Int
        var id: UUID
        var source: String
        var environment: String
        var provider_transaction_id: String
        var entitlement_key: String?
        var user_id: String?
        var product_id: String?
        var product_type: String?
        var status: String
        var amount: Int64?
        var currency: String?
        var purchased_at_us: Int64?
        var refunded_at_us: Int64?
        var amount_refunded: Int64?
        var period_end_us: Int64?
        var last_event_time_us: Int64?
        var event_id: Int64

        init(n: Int, id: UUID, _ t: TransactionState, eventID: Int64) {
            self.n = n
            self.id = id
            source = t.source.rawValue
            environment = t.environment.rawValue
            provider_transaction_id = t.providerTransactionID
            entitlement_key = t.entitlementKey
            user_id = t.userID
            product_id = t.productID
            product_type = t.productType?.rawValue
            status = t.status.rawValue
            amount = t.amount
            currency = t.currency
            purchased_at_us = t.purchasedAt?.postgresMicroseconds
            refunded_at_us = t.refundedAt?.postgresMicroseconds
            amount_refunded = t.amountRefunded
            period_end_us = t.periodEnd?.postgresMicroseconds
            last_event_time_us = t.lastEventTime?.postgresMicroseconds
            event_id = eventID
        }
    }
}
