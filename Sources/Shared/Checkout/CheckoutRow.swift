// SPDX-License-Identifier: Apache-2.0
public import Foundation
import PostgresNIO

/// One row of `checkouts` (sql/0033): a checkout `POST /v1/iap/payment-intents` started.
public struct CheckoutRow: Sendable, Equatable {
    public var id: UUID
    public var userID: String
    public var productID: String
    public var environment: PurchaseEnvironment
    public var kind: CheckoutKind
    public var terms: String
    public var state: CheckoutRowState
    public var claimedUntil: Date?
    public var customer: String?
    public var objects: StripeCheckoutObjects
    public var expiresAt: Date
    public var cancelledAt: Date?
    public var createdAt: Date
    /// The user's subscription this one replaces once paid.
    public var replacesSubscription: String?
    /// Who may be handed it again (sql/0045): `nil` when a server key asked for it; for an app's
    /// client key, the digest of its `Idempotency-Key` (``CheckoutStore/requester(idempotencyKey:)``).
    public var requester: String? = nil

    /// Whether its Stripe objects are made and stored.
    public var answered: Bool { objects.isAnswer }

    /// Whether its status waits for a card to be saved: a trial made with a SetupIntent. A trial
    /// Stripe made without one (nothing to confirm) succeeds with its entitlement, as a subscription does.
    public var savesACardFirst: Bool { kind == .trial && objects.setupIntent != nil }

    /// The Stripe ids it made, with the link kind each is stored under in `provider_links`.
    public var stripeIDs: [(kind: ProviderLink.Kind, id: String)] {
        [
            (.stripePaymentIntent, objects.paymentIntent), (.stripeSubscription, objects.subscription), (.stripeInvoice, objects.invoice),
            (.stripeSetupIntent, objects.setupIntent), (.stripeCheckoutSession, objects.checkoutSession),
        ].compactMap { kind, id in id.map { (kind, $0) } }
    }

    /// The `Idempotency-Key` of one of its Stripe calls: the same call of the same checkout is the
    /// same key, whichever process makes it and however often.
    public func idempotencyKey(_ call: String) -> String { "sluice-checkout-\(id.uuidString.lowercased())-\(call)" }

    static let columns = """
        id, user_id, product_id, environment, kind, terms, state, claimed_until, stripe_customer, payment_intent, subscription, invoice,
        setup_intent, checkout_session, client_secret, checkout_url, expires_at, cancelled_at, created_at, replaces_subscription, requester
        """

    static func decode(_ rows: PostgresRowSequence) async throws -> [CheckoutRow] {
        var found: [CheckoutRow] = []
        for try await row in rows {
            let c = row.makeRandomAccess()
            found.append(CheckoutRow(
                id: try c["id"].decode(UUID.self), userID: try c["user_id"].decode(String.self), productID: try c["product_id"].decode(String.self),
                environment: PurchaseEnvironment(rawValue: try c["environment"].decode(String.self)) ?? .production,
                kind: CheckoutKind(rawValue: try c["kind"].decode(String.self)) ?? .payment, terms: try c["terms"].decode(String.self),
                state: CheckoutRowState(rawValue: try c["state"].decode(String.self)) ?? .open, claimedUntil: try c["claimed_until"].decode(Date?.self),
                customer: try c["stripe_customer"].decode(String?.self),
                objects: StripeCheckoutObjects(
                    paymentIntent: try c["payment_intent"].decode(String?.self), subscription: try c["subscription"].decode(String?.self),
                    invoice: try c["invoice"].decode(String?.self), setupIntent: try c["setup_intent"].decode(String?.self),
                    checkoutSession: try c["checkout_session"].decode(String?.self), clientSecret: try c["client_secret"].decode(String?.self),
                    checkoutURL: try c["checkout_url"].decode(String?.self)),
                expiresAt: try c["expires_at"].decode(Date.self), cancelledAt: try c["cancelled_at"].decode(Date?.self),
                createdAt: try c["created_at"].decode(Date.self), replacesSubscription: try c["replaces_subscription"].decode(String?.self),
                requester: try c["requester"].decode(String?.self)))
        }
        return found
    }
}
