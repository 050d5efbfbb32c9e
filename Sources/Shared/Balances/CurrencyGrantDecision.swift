// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// What a ledger row's change does to its buyer's balances (docs/credits.md): the catalog
/// product's currencies granted when it is paid, taken back when refunded (in part or whole) or
/// disputed, given back when the refund is reversed or the dispute won. Pure: the worker saves
/// the transaction, asks this, and makes the changes in the same database transaction, keyed so
/// that a duplicate, replayed, recovered or rebuilt event changes nothing twice.
public enum CurrencyGrantDecision {
    public enum Change: Sendable, Equatable {
        /// Grant `amounts` to `user`, once under `key`; what is not spent by `expiresAt` expires
        /// then (`nil`: never).
        case grant(user: String, amounts: [String: Int64], cause: BalanceCause, key: String, expiresAt: Date? = nil)
        /// Take back `numerator / denominator` of what was granted under `grantKey` (rounded up,
        /// stopping at zero), once under `key`. The share is the payment's whole refund so far:
        /// `sluice_reverse_balance_change` asks only what earlier take-backs did not.
        case takeBack(grantKey: String, numerator: Int64, denominator: Int64, key: String)
        /// Give back what the take-backs of the grant under `grantKey` took, once under `key`.
        case giveBack(grantKey: String, key: String)
    }

    /// `changes` as `sluice_write_applied_batch` reads a call's `balance_changes`, in order; `nil`
    /// for none. A JSON array of:
    /// - `{kind: grant, user_id, adjustments, cause, idempotency_key, cause_event_id,
    ///   expires_at_us?}`: a row of `sluice_deposit_balances` as it is (the function reads
    ///   `expires_at_us`, microseconds since 2000, as its `expires_at`), so that PostgreSQL only
    ///   gathers a run of grants instead of building each anew;
    /// - `{kind: take_back, of, numerator, denominator, key, cause_event_id}` and
    ///   `{kind: give_back, of, key, cause_event_id}` (`of`: the grant's key).
    ///
    /// - Parameter causeEventID: the applied event the changes come from, named by each ledger row
    ///   for its `balance.changed` announcement.
    public static func argument(_ changes: [Change], causeEventID: Int64) -> String? {
        guard !changes.isEmpty else { return nil }
        let objects = changes.map { change -> [JSONTextMember] in
            switch change {
            case let .grant(user, amounts, cause, key, expiresAt):
                return [
                    JSONTextMember("kind", "grant"), JSONTextMember("user_id", user),
                    JSONTextMember("adjustments", .object(JSONTextMember.sorted(amounts.map { JSONTextMember($0.key, $0.value) }))),
                    JSONTextMember("cause", cause.rawValue), JSONTextMember("idempotency_key", key),
                    JSONTextMember("cause_event_id", causeEventID),
                ] + (expiresAt.map { [JSONTextMember("expires_at_us", $0.postgresMicroseconds)] } ?? [])
            case let .takeBack(grantKey, numerator, denominator, key):
                return [
                    JSONTextMember("kind", "take_back"), JSONTextMember("of", grantKey), JSONTextMember("numerator", numerator),
                    JSONTextMember("denominator", denominator), JSONTextMember("key", key), JSONTextMember("cause_event_id", causeEventID),
                ]
            case let .giveBack(grantKey, key):
                return [
                    JSONTextMember("kind", "give_back"), JSONTextMember("of", grantKey), JSONTextMember("key", key),
                    JSONTextMember("cause_event_id", causeEventID),
                ]
            }
        }
        var json = JSONTextWriter()
        json.array { array in
            for object in objects { array.object(object) }
        }
        return json.text
    }

    /// The prefixes of the keys only Sluice's own ledger rows carry: a grant's, take-back's and
    /// give-back's (``keys(of:)``) and an expiry's (`expiry:` + the grant's key,
    /// sluice_expire_balance_lots). An adjustment from the API or an operator may not use one: a
    /// row under such a key would stop the grant it names from being made, or be found by the
    /// take-back of that grant.
    public static let reservedKeyPrefixes = ["grant:", "take_back:", "give_back:", "expiry:"]

    /// Whether `key` starts with one of ``reservedKeyPrefixes``.
    public static func isReserved(_ key: String) -> Bool { reservedKeyPrefixes.contains { key.hasPrefix($0) } }

    /// The idempotency keys of one transaction's grant, take-back and give-back. A refund in
    /// part while the payment stands takes back under `takeBack#<amount refunded so far>`, or
    /// `takeBack#q<how many refunded so far>` for some of a purchase of several
    /// (``partialTakeBackKey(_:refunded:)``), one key per step.
    public static func keys(of transaction: TransactionState) -> (grant: String, takeBack: String, giveBack: String) {
        let key = EntityKey.transaction(source: transaction.source, environment: transaction.environment, id: transaction.providerTransactionID)
        let (grant, takeBack, giveBack) = (reservedKeyPrefixes[0], reservedKeyPrefixes[1], reservedKeyPrefixes[2])
        return (grant + key, takeBack + key, giveBack + key)
    }

    /// The key of a take-back for a refund in part, `refunded` the payment's refund so far.
    public static func partialTakeBackKey(_ takeBackKey: String, refunded: RefundedPart) -> String {
        switch refunded.measure {
        case .money: takeBackKey + "#" + String(refunded.numerator)
        case .quantity: takeBackKey + "#q" + String(refunded.numerator)
        }
    }

    /// How much of a payment that stands was refunded so far, as a share of it: money, when an
    /// amount was refunded (a subscription period's, Stripe's `amount_refunded`); else how many of
    /// a purchase of several (Google Play's quantity-based refund, which names units, not money,
    /// whether or not the purchase's price is known).
    public struct RefundedPart: Sendable, Equatable {
        public enum Measure: Sendable, Equatable { case money, quantity }
        public var measure: Measure
        public var numerator: Int64
        public var denominator: Int64

        public init(measure: Measure, numerator: Int64, denominator: Int64) {
            (self.measure, self.numerator, self.denominator) = (measure, numerator, denominator)
        }

        /// `nil` when nothing was refunded, or the transaction says of neither.
        public init?(of transaction: TransactionState) {
            if let amount = transaction.amount, amount > 0, let refunded = transaction.amountRefunded, refunded > 0 {
                (measure, numerator, denominator) = (.money, min(refunded, amount), amount)
            } else if let quantity = transaction.quantity, quantity > 1, let refunded = transaction.quantityRefunded, refunded > 0 {
                (measure, numerator, denominator) = (.quantity, Int64(min(refunded, quantity)), Int64(quantity))
            } else {
                return nil
            }
        }

        /// Whether it is more than `earlier` refunded (by the same measure).
        func isMore(than earlier: RefundedPart?) -> Bool {
            guard let earlier, earlier.measure == measure else { return true }
            return numerator > earlier.numerator
        }
    }

    /// - Parameters:
    ///   - before: the transaction as stored before this event; `nil` when new.
    ///   - product: the catalog product its `product_id` names; `nil` when none (nothing granted).
    ///   - firstPeriod: whether its entitlement was created by this event (a subscription's first
    ///     payment is a purchase, the later ones renewals).
    ///   - periodEnd: the end of the period it paid for (its own, else its entitlement's expiry),
    ///     when the product's grants expire then.
    /// - Returns: the changes, in the order they are made (a grant before a take-back of it).
    public static func changes(
        before: TransactionState?, after: TransactionState, product: CatalogProduct?, firstPeriod: Bool, periodEnd: Date? = nil
    ) -> [Change] {
        let keys = keys(of: after)
        let wasPaid = before.map { [.succeeded, .refunded, .disputed].contains($0.status) } ?? false
        let wasTakenBack = before.map { [.refunded, .disputed].contains($0.status) } ?? false
        // Paid before with no user to grant to (a purchase linked late): granted now; also when
        // it was refunded or disputed meanwhile and is paid again (a refund reversed), since
        // nothing was granted, nor taken back, without a user.
        let userLearned = wasPaid && before?.userID == nil && after.userID != nil
        switch after.status {
        case .succeeded where !wasPaid || userLearned:
            guard let grant = grant(after, product: product, firstPeriod: firstPeriod, periodEnd: periodEnd) else { return [] }
            // Refunded in part already (the first event seen of it, or of its user).
            return [grant] + partialTakeBack(after, before: nil, keys: keys)
        case .succeeded where wasTakenBack:
            // The grant first, under its key: made when it was paid, it is not made again; never
            // made (refunded before its purchase learned its user, linked while refunded: nothing
            // was granted nor taken), it is made now. Then what was taken is given back; a refund
            // in part made before or during the dispute stands: taken (again) after.
            let grant = grant(after, product: product, firstPeriod: firstPeriod, periodEnd: periodEnd)
            return (grant.map { [$0] } ?? []) + [.giveBack(grantKey: keys.grant, key: keys.giveBack)]
                + partialTakeBack(after, before: nil, keys: keys)
        case .succeeded:
            // A refund in part, or a further one: the payment stands.
            return partialTakeBack(after, before: before.flatMap(RefundedPart.init(of:)), keys: keys)
        case .refunded, .disputed:
            guard before?.status == .succeeded else { return [] }
            // A subscription period refunded in part takes back its share, and so do some of a
            // purchase of several (Apple's REFUND_PRORATED of one of three); anything else all of it.
            if after.status == .refunded, product?.type == .autoRenewable || (after.quantity ?? 1) > 1, let amount = after.amount, amount > 0,
               let refunded = after.amountRefunded, refunded < amount {
                // A share that came to no minor unit (Apple's REFUND_PRORATED of a fraction of a
                // percent of a small price) takes nothing, not the whole grant.
                guard refunded > 0 else { return [] }
                return [.takeBack(grantKey: keys.grant, numerator: refunded, denominator: amount, key: keys.takeBack)]
            }
            return [.takeBack(grantKey: keys.grant, numerator: 1, denominator: 1, key: keys.takeBack)]
        default:
            return []
        }
    }

    /// The take-back of a payment refunded in part, when its refund grew past `before`'s.
    private static func partialTakeBack(
        _ paid: TransactionState, before: RefundedPart?, keys: (grant: String, takeBack: String, giveBack: String)
    ) -> [Change] {
        guard let share = RefundedPart(of: paid), share.isMore(than: before) else { return [] }
        return [.takeBack(grantKey: keys.grant, numerator: share.numerator, denominator: share.denominator,
                          key: partialTakeBackKey(keys.takeBack, refunded: share))]
    }

    /// The grant of a paid transaction whose entitlement learned its user only now (the
    /// transaction itself still has none): as if it were paid now, under the same key, so a grant
    /// made before is not made again; with the take-back of a refund in part it had already.
    /// - Parameter periodEnd: the end of its period when the row has none (its entitlement's expiry).
    public static func grantOnLinking(_ transaction: TransactionState, user: String, product: CatalogProduct?, periodEnd: Date? = nil) -> [Change] {
        guard transaction.status == .succeeded, transaction.userID == nil else { return [] }
        var linked = transaction
        linked.userID = user
        guard let grant = grant(linked, product: product, firstPeriod: false, periodEnd: transaction.periodEnd ?? periodEnd) else { return [] }
        return [grant] + partialTakeBack(linked, before: nil, keys: keys(of: linked))
    }

    /// The grant of a paid transaction with a user, of its catalog product's currencies; a
    /// subscription's expires at `periodEnd` when the product says so.
    private static func grant(_ paid: TransactionState, product: CatalogProduct?, firstPeriod: Bool, periodEnd: Date?) -> Change? {
        guard let user = paid.userID, let product else { return nil }
        let subscription = product.type == .autoRenewable
        // A free trial's period as its provider marks it; a period of no amount is not one by that
        // alone (a 100 % coupon, the customer's balance).
        guard var amounts = product.currencies(trial: subscription && paid.isTrial) else { return nil }
        // Three of a consumable bought at once are three grants' worth (under the one key).
        if let quantity = paid.quantity, quantity > 1 {
            amounts = amounts.mapValues { amount in
                let (total, overflow) = amount.multipliedReportingOverflow(by: Int64(quantity))
                return overflow ? BalanceAdjustments.largestAmount : min(total, BalanceAdjustments.largestAmount)
            }
        }
        let expiresAt = subscription && product.currencyGrantsExpire ? periodEnd : nil
        return .grant(
            user: user, amounts: amounts, cause: subscription && !firstPeriod ? .renewal : .purchase, key: keys(of: paid).grant, expiresAt: expiresAt)
    }
}
