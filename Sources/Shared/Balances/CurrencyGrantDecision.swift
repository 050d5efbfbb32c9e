// SPDX-License-Identifier: Apache-2.0

/// What a ledger row's change does to its buyer's balances (docs/credits.md): the catalog
/// product's currencies granted when it is paid, taken back when refunded or disputed, given back
/// when the refund is reversed or the dispute won. Pure: the worker saves the transaction, asks
/// this, and makes the change in the same database transaction, keyed so that a duplicate,
/// replayed, recovered or rebuilt event changes nothing twice.
public enum CurrencyGrantDecision {
    public enum Change: Sendable, Equatable {
        /// Grant `amounts` to `user`, once under `key`.
        case grant(user: String, amounts: [String: Int64], cause: BalanceCause, key: String)
        /// Take back `numerator / denominator` of what was granted under `grantKey` (rounded up,
        /// stopping at zero), once under `key`.
        case takeBack(grantKey: String, numerator: Int64, denominator: Int64, key: String)
        /// Give back what the take-back under `takeBackKey` took, once under `key`.
        case giveBack(takeBackKey: String, key: String)
    }

    /// `changes` as `sluice_write_applied_batch` reads a call's `balance_changes`: a JSON array of
    /// `{kind: grant, user, amounts, cause, key}`, `{kind: take_back, of, numerator, denominator,
    /// key}` and `{kind: give_back, of, key}`, in order; `nil` for none.
    public static func argument(_ changes: [Change]) -> String? {
        guard !changes.isEmpty else { return nil }
        let objects = changes.map { change -> [JSONTextMember] in
            switch change {
            case let .grant(user, amounts, cause, key):
                return [
                    JSONTextMember("kind", "grant"), JSONTextMember("user", user),
                    JSONTextMember("amounts", .object(JSONTextMember.sorted(amounts.map { JSONTextMember($0.key, $0.value) }))),
                    JSONTextMember("cause", cause.rawValue), JSONTextMember("key", key),
                ]
            case let .takeBack(grantKey, numerator, denominator, key):
                return [
                    JSONTextMember("kind", "take_back"), JSONTextMember("of", grantKey), JSONTextMember("numerator", numerator),
                    JSONTextMember("denominator", denominator), JSONTextMember("key", key),
                ]
            case let .giveBack(takeBackKey, key):
                return [JSONTextMember("kind", "give_back"), JSONTextMember("of", takeBackKey), JSONTextMember("key", key)]
            }
        }
        var json = JSONTextWriter()
        json.array { array in
            for object in objects { array.object(object) }
        }
        return json.text
    }

    /// The idempotency keys of one transaction's grant, take-back and give-back.
    public static func keys(of transaction: TransactionState) -> (grant: String, takeBack: String, giveBack: String) {
        let key = EntityKey.transaction(source: transaction.source, environment: transaction.environment, id: transaction.providerTransactionID)
        return ("grant:" + key, "take_back:" + key, "give_back:" + key)
    }

    /// - Parameters:
    ///   - before: the transaction as stored before this event; `nil` when new.
    ///   - product: the catalog product its `product_id` names; `nil` when none (nothing granted).
    ///   - firstPeriod: whether its entitlement was created by this event (a subscription's first
    ///     payment is a purchase, the later ones renewals).
    public static func change(before: TransactionState?, after: TransactionState, product: CatalogProduct?, firstPeriod: Bool) -> Change? {
        let keys = keys(of: after)
        let wasPaid = before.map { [.succeeded, .refunded, .disputed].contains($0.status) } ?? false
        let wasTakenBack = before.map { [.refunded, .disputed].contains($0.status) } ?? false
        // Paid before with no user to grant to (a purchase linked late): granted now.
        let userLearned = before?.userID == nil && before?.status == .succeeded && after.userID != nil
        switch after.status {
        case .succeeded where !wasPaid || userLearned:
            return grant(after, product: product, firstPeriod: firstPeriod)
        case .succeeded where wasTakenBack:
            return .giveBack(takeBackKey: keys.takeBack, key: keys.giveBack)
        case .refunded, .disputed:
            guard before?.status == .succeeded else { return nil }
            // A subscription period refunded in part gives back its share; anything else all of it.
            if after.status == .refunded, product?.type == .autoRenewable, let amount = after.amount, let refunded = after.amountRefunded,
                amount > 0, (1..<amount).contains(refunded)
            {
                return .takeBack(grantKey: keys.grant, numerator: refunded, denominator: amount, key: keys.takeBack)
            }
            return .takeBack(grantKey: keys.grant, numerator: 1, denominator: 1, key: keys.takeBack)
        default:
            return nil
        }
    }

    /// The grant of a paid transaction whose entitlement learned its user only now (the
    /// transaction itself still has none): as if it were paid now, under the same key, so a grant
    /// made before is not made again.
    public static func grantOnLinking(_ transaction: TransactionState, user: String, product: CatalogProduct?) -> Change? {
        guard transaction.status == .succeeded, transaction.userID == nil else { return nil }
        var linked = transaction
        linked.userID = user
        return grant(linked, product: product, firstPeriod: false)
    }

    /// The grant of a paid transaction with a user, of its catalog product's currencies.
    private static func grant(_ paid: TransactionState, product: CatalogProduct?, firstPeriod: Bool) -> Change? {
        guard let user = paid.userID, let product else { return nil }
        let subscription = product.type == .autoRenewable
        // A free trial's period is a transaction of no amount (Apple's introductory offer).
        guard let amounts = product.currencies(trial: subscription && paid.amount == 0) else { return nil }
        return .grant(user: user, amounts: amounts, cause: subscription && !firstPeriod ? .renewal : .purchase, key: keys(of: paid).grant)
    }
}
