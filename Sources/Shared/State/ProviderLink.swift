// SPDX-License-Identifier: Apache-2.0

/// What one provider id points at (`provider_links`).
public struct ProviderLink: Sendable, Equatable {
    /// The kinds of provider ids Sluice links.
    public enum Kind: String, Sendable {
        case stripeCustomer = "stripe_customer"
        case stripeSubscription = "stripe_subscription"
        case stripePaymentIntent = "stripe_payment_intent"
        case stripeCharge = "stripe_charge"
        case stripeCheckoutSession = "stripe_checkout_session"
        case stripeSetupIntent = "stripe_setup_intent"
        case stripeInvoice = "stripe_invoice"
        /// A Stripe payment (its transaction key) that Sluice recorded as not the app's: a refund or
        /// dispute of it is recorded too, never waited for.
        case stripeOutsidePayment = "stripe_outside_payment"
        case appleOriginalTransaction = "apple_original_transaction"
        /// A Google Play purchase token: the entitlement it is (its chain's first token's), and
        /// its user.
        case playPurchaseToken = "play_purchase_token"
        /// A Google Play purchase token a newer one replaced (`linkedPurchaseToken`): its later
        /// states no longer change the entitlement; `transactionKey` is the newer token.
        case playReplacedToken = "play_replaced_token"
    }

    public var kind: Kind
    public var externalID: String
    public var userID: String?
    public var entitlementKey: String?
    /// The `provider_transaction_id` of the transaction it names.
    public var transactionKey: String?
    /// The Stripe Connect account the id belongs to.
    public var account: String?
    /// Whose state the id belongs to: `""` for the platform's live objects and every Apple id,
    /// otherwise the Stripe account and mode prefix (`test:`, `acct_…:`, `acct_…:test:`). A lookup
    /// finds only links of its own scope.
    public var scope: String

    public init(
        _ kind: Kind, _ externalID: String, userID: String? = nil, entitlementKey: String? = nil,
        transactionKey: String? = nil, account: String? = nil, scope: String = ""
    ) {
        self.kind = kind
        self.externalID = externalID
        self.userID = userID
        self.entitlementKey = entitlementKey
        self.transactionKey = transactionKey
        self.account = account
        self.scope = scope
    }

    /// This link as saving `newer` over it leaves it: each field `newer` carries replaces this
    /// one's; a `nil` keeps it (`sluice_save_links`, sql/functions/).
    public func completed(by newer: ProviderLink) -> ProviderLink {
        var link = self
        link.userID = newer.userID ?? userID
        link.entitlementKey = newer.entitlementKey ?? entitlementKey
        link.transactionKey = newer.transactionKey ?? transactionKey
        link.account = newer.account ?? account
        return link
    }
}

/// What happened to an event in the worker (`applied_events.outcome`).
public enum EventOutcome: String, Sendable, Equatable {
    /// It changed state.
    case applied
    /// It was older than the state it would change: nothing changed.
    case stale
    /// It carries nothing to change (TEST, trial_will_end, unknown types): kept as a record.
    case recorded
}
