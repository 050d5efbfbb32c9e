// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// What the app confirms for a checkout (docs/checkout.md).
public enum CheckoutKind: String, Sendable, Codable, CaseIterable {
    /// A one-time product: a PaymentIntent and its client secret.
    case payment
    /// A subscription made `default_incomplete`: its first invoice's client secret.
    case subscription
    /// A subscription with a free trial: `trialing`, and its SetupIntent's client secret.
    case trial
    /// A Stripe-hosted Checkout Session, opened in a browser at its `url`.
    case hosted
}

/// A checkout's status as the app sees it (`GET /v1/iap/transactions/{id}`).
public enum CheckoutStatus: String, Sendable, Codable, CaseIterable {
    case pending, processing, succeeded, failed, refunded, disputed

    /// Whether a `?wait=` request is still waiting: the payment has not ended either way.
    public var isUnsettled: Bool { self == .pending || self == .processing }

    /// The status from what the worker applied and from the row's own lifecycle.
    ///
    /// What the proven Stripe events say comes first: a payment confirmed on an old, replaced
    /// checkout still succeeded. A live entitlement with no transaction yet is a subscription
    /// whose invoice event is still on its way — but not a trial that saves a card first
    /// (``CheckoutRow/savesACardFirst``): Stripe makes it `trialing` before any card is saved, so
    /// it has succeeded only when its SetupIntent did. Otherwise a replaced, expired or abandoned
    /// checkout has failed, and any other is pending.
    public static func of(
        savesACardFirst: Bool, row state: CheckoutRowState, answered: Bool, transaction: TransactionStatus?, entitlementIsLive: Bool
    ) -> CheckoutStatus {
        if let transaction, transaction != .pending { return CheckoutStatus(rawValue: transaction.rawValue) ?? .pending }
        if entitlementIsLive, !savesACardFirst { return .succeeded }
        switch state {
        case .superseded, .expired: return .failed
        case .released: return answered ? .pending : .failed
        case .open: return .pending
        }
    }
}

/// The lifecycle of a `checkouts` row (sql/0033).
public enum CheckoutRowState: String, Sendable, Codable, CaseIterable {
    /// The user's one checkout slot for the product: concurrent requests get this one.
    case open
    /// A new checkout may be made beside it: its payment is processing or ended, or Stripe refused to make it.
    case released
    /// Replaced by a newer checkout (another price or trial, or older than the reuse window): failed,
    /// and cancelled at Stripe by the worker.
    case superseded
    /// Nobody confirmed it within its window: cancelled at Stripe by the worker, failed.
    case expired
}

/// What a checkout request does with the open checkout of the same user and product
/// (``CheckoutSlot/decide(open:terms:now:reuseWindow:)``): the single flight, held in PostgreSQL.
public enum CheckoutSlot {
    /// The open checkout as it stands.
    public struct Open: Sendable, Equatable {
        public var terms: String
        public var createdAt: Date
        /// Until when the request that made it is making its Stripe objects; `nil` once they are made.
        public var claimedUntil: Date?
        /// Whether its Stripe objects are made and stored (its answer is known).
        public var answered: Bool
        public var status: CheckoutStatus
        /// When the worker cancels it if unconfirmed.
        public var expiresAt: Date
        /// Whether this request may be handed it (its client secret, its customer): a server key's
        /// request, or the app's own client-key request repeated (``CheckoutRow/requester``).
        /// Another client-key request naming the same user supersedes it instead.
        public var mayBeHandedOver: Bool

        public init(
            terms: String, createdAt: Date, claimedUntil: Date?, answered: Bool, status: CheckoutStatus, expiresAt: Date, mayBeHandedOver: Bool = true
        ) {
            self.mayBeHandedOver = mayBeHandedOver
            self.terms = terms
            self.createdAt = createdAt
            self.expiresAt = expiresAt
            self.claimedUntil = claimedUntil
            self.answered = answered
            self.status = status
        }
    }

    public enum Action: Sendable, Equatable {
        /// No open checkout: make one.
        case create
        /// The same pending checkout: answer it again (`reused: true`).
        case reuse
        /// Another request is making it right now: look again shortly.
        case wait
        /// Its maker gave up (timed out, or its process died) before storing an answer: make its
        /// objects again under the same `Idempotency-Key`s, so Stripe answers the first ones.
        case takeOver
        /// Its payment is processing or ended: leave it as it is, and make a new one beside it.
        case release
        /// Other terms, or older than the reuse window: fail it (the worker cancels it at Stripe)
        /// and make a new one.
        case supersede
    }

    /// A checkout this close to its window's end is not handed out again: the app would confirm a
    /// page or payment the worker is about to cancel.
    public static let closeToExpiry: TimeInterval = 300

    public static func decide(open: Open?, terms: String, now: Date, reuseWindow: TimeInterval) -> Action {
        guard let open else { return .create }
        // What may be given to this request again, answered or taken over: the same terms, for
        // this requester, within the reuse window (at most a day: Stripe keeps an
        // `Idempotency-Key` 24 hours, so a takeover's keys still name the first objects), and
        // not about to be cancelled.
        let handsOver = open.terms == terms && open.mayBeHandedOver && now.timeIntervalSince(open.createdAt) < reuseWindow
            && open.expiresAt.timeIntervalSince(now) >= closeToExpiry
        guard open.answered else {
            if let claimedUntil = open.claimedUntil, claimedUntil > now { return .wait }
            return handsOver ? .takeOver : .supersede
        }
        if open.status != .pending { return .release }
        return handsOver ? .reuse : .supersede
    }
}

/// The price and trial a checkout is made with, as one comparable text: a request whose terms
/// differ from the open checkout's gets a new checkout.
public struct CheckoutTerms: Sendable, Equatable {
    public var kind: CheckoutKind
    public var price: StripePrice
    public var trialDays: Int?
    public var trialEnd: Date?
    public var successURL: String?
    public var cancelURL: String?

    public init(kind: CheckoutKind, price: StripePrice, trialDays: Int? = nil, trialEnd: Date? = nil, successURL: String? = nil, cancelURL: String? = nil) {
        self.kind = kind
        self.price = price
        self.trialDays = trialDays
        self.trialEnd = trialEnd
        self.successURL = successURL
        self.cancelURL = cancelURL
    }

    public var text: String {
        [
            kind.rawValue, price.id, price.unitAmount.map(String.init) ?? "-", price.currency,
            trialDays.map { "trial_days=\($0)" } ?? trialEnd.map { "trial_end=\(Int64($0.timeIntervalSince1970))" } ?? "no_trial",
            successURL ?? "-", cancelURL ?? "-",
        ].joined(separator: "|")
    }
}

extension ProductType {
    /// Whether a Stripe price billed this way may sell a catalog product of this type: an
    /// auto-renewable subscription's price recurs; every other product's is paid once (a
    /// non-renewing subscription is bought once for its period). A checkout of a product whose
    /// price does not fit is refused (`409 price_mismatch`) rather than sold as what it is not.
    public func fitsStripePrice(recurring: Bool) -> Bool { (self == .autoRenewable) == recurring }
}
