// SPDX-License-Identifier: Apache-2.0
import Shared

/// One kind of Stripe object as Sluice reads it: the ids it carries in every API version's shape,
/// the links it reads to find its payment, subscription and user, and the links it writes.
///
/// This is the one place that knows where a field lives. Adding a kind, or a field an API version
/// moved (`2025-03-31.basil` moved an invoice's subscription to `parent.subscription_details` and
/// dropped `invoice` from PaymentIntents and Charges), is one entry in ``all``; `docs/stripe.md`
/// says the same in prose.
struct StripeObjectKind: Sendable {
    /// An id of another object that this one carries.
    struct Reference: Sendable {
        var kind: ProviderLink.Kind
        /// Where the id is in each API version's shape; the first present wins. A reference may be
        /// an id or an expanded object.
        var paths: [String]
    }

    /// Where a payment's ledger row (its transaction key) comes from when no link names it.
    enum PaymentSource: Sendable {
        /// The object's own id.
        case own
        /// The id of the object it references with this link kind.
        case reference(ProviderLink.Kind)
    }

    /// Stripe's `object` value.
    var name: String
    /// The link kind of the object's own `id`, when Sluice links it.
    var own: ProviderLink.Kind?
    /// The ids of other objects it carries, in the order their links are read.
    var references: [Reference]
    /// The transaction key when no link names one: the first source present.
    var payment: [PaymentSource]
    /// Objects whose `user_id`, `product_id`, `subscription_id` and `email` keys name the app's
    /// user and product, in order of precedence.
    var metadataPaths: [String]
    /// Fields that name the user directly (Checkout's `client_reference_id`).
    var userPaths: [String] = []
    /// The product when no metadata names it.
    var productPaths: [String] = []
    /// Paths of the price id: when `previous_attributes` holds another price there, the plan was
    /// changed in place, the metadata that was not updated with it is stale, and the product is
    /// read from the new price (the first of ``metadataPaths`` is the price's metadata, then
    /// ``productPaths``). A renewal also lists `items` in `previous_attributes` (from
    /// `2025-03-31.basil` the period lives on the item) but with the same price.
    var productChangedBy: [String] = []
    /// Whether the object can be an app purchase of its own (a one-time PaymentIntent or Checkout
    /// Session): then, with no subscription, its entitlement is keyed by its payment.
    var isPurchase = false

    /// The kind of `object`'s `object` field, if Sluice reads that kind.
    static func of(_ object: JSONValue) -> StripeObjectKind? {
        guard let name = object["object"].string else { return nil }
        return all.first { $0.name == name }
    }

    static let all: [StripeObjectKind] = [
        StripeObjectKind(
            name: "payment_intent", own: .stripePaymentIntent,
            references: [.init(kind: .stripeInvoice, paths: ["invoice"]),  // until 2025-03-31.basil
                         .init(kind: .stripeCharge, paths: ["latest_charge"]),
                         .init(kind: .stripeCustomer, paths: ["customer"])],
            payment: [.reference(.stripeInvoice), .own], metadataPaths: ["metadata"], isPurchase: true),
        StripeObjectKind(
            name: "charge", own: .stripeCharge,
            references: [.init(kind: .stripePaymentIntent, paths: ["payment_intent"]),
                         .init(kind: .stripeInvoice, paths: ["invoice"]),  // until 2025-03-31.basil
                         .init(kind: .stripeCustomer, paths: ["customer"])],
            payment: [.reference(.stripeInvoice), .reference(.stripePaymentIntent)], metadataPaths: ["metadata"]),
        StripeObjectKind(
            name: "dispute", own: nil,
            references: [.init(kind: .stripeCharge, paths: ["charge"]), .init(kind: .stripePaymentIntent, paths: ["payment_intent"])],
            payment: [.reference(.stripePaymentIntent)], metadataPaths: []),
        StripeObjectKind(
            name: "refund", own: nil,
            references: [.init(kind: .stripeCharge, paths: ["charge"]), .init(kind: .stripePaymentIntent, paths: ["payment_intent"])],
            payment: [.reference(.stripePaymentIntent)], metadataPaths: []),
        StripeObjectKind(
            name: "invoice", own: .stripeInvoice,
            references: [.init(kind: .stripeSubscription, paths: ["parent.subscription_details.subscription", "subscription"]),
                         .init(kind: .stripePaymentIntent, paths: ["payment_intent"]),  // until 2025-03-31.basil
                         .init(kind: .stripeCharge, paths: ["charge"]),  // until 2025-03-31.basil
                         .init(kind: .stripeCustomer, paths: ["customer"])],
            payment: [.own],
            metadataPaths: ["parent.subscription_details.metadata", "subscription_details.metadata", "metadata"],
            productPaths: ["lines.data.0.pricing.price_details.product", "lines.data.0.price.product", "lines.data.0.plan.product"]),
        StripeObjectKind(
            // From 2025-03-31.basil the only link from a payment to its invoice.
            name: "invoice_payment", own: nil,
            references: [.init(kind: .stripeInvoice, paths: ["invoice"]),
                         .init(kind: .stripePaymentIntent, paths: ["payment.payment_intent", "payment_intent"]),
                         .init(kind: .stripeCharge, paths: ["payment.charge", "charge"])],
            payment: [.reference(.stripeInvoice)], metadataPaths: []),
        StripeObjectKind(
            name: "checkout.session", own: .stripeCheckoutSession,
            references: [.init(kind: .stripeSubscription, paths: ["subscription"]),
                         .init(kind: .stripeInvoice, paths: ["invoice"]),
                         .init(kind: .stripePaymentIntent, paths: ["payment_intent"]),
                         .init(kind: .stripeSetupIntent, paths: ["setup_intent"]),
                         .init(kind: .stripeCustomer, paths: ["customer"])],
            payment: [.reference(.stripeInvoice), .reference(.stripePaymentIntent), .own],
            metadataPaths: ["metadata", "subscription.metadata"], userPaths: ["client_reference_id"], isPurchase: true),
        StripeObjectKind(
            name: "subscription", own: .stripeSubscription,
            // A trial made `default_incomplete` collects its card with this SetupIntent (web checkout).
            references: [.init(kind: .stripeCustomer, paths: ["customer"]), .init(kind: .stripeSetupIntent, paths: ["pending_setup_intent"])],
            payment: [], metadataPaths: ["items.data.0.price.metadata", "metadata"],
            productPaths: ["items.data.0.price.lookup_key", "items.data.0.price.product", "plan.product"],
            productChangedBy: ["items.data.0.price.id", "plan.id"]),
        StripeObjectKind(
            name: "setup_intent", own: .stripeSetupIntent,
            // A trial subscription's SetupIntent is the ledger row of the trial's start, when no
            // Checkout Session made it (``StripeDecider/trialSetUp(_:_:_:succeeded:)``).
            references: [.init(kind: .stripeCustomer, paths: ["customer"])], payment: [.own], metadataPaths: ["metadata"]),
    ]

    // MARK: Reading an object

    /// The object's own id and the ids it references, each with its link kind, in reading order.
    /// A PaymentIntent's `metadata.subscription_id` (the app's convention) counts as a reference.
    func ids(in object: JSONValue) -> [(kind: ProviderLink.Kind, id: String)] {
        var ids: [(kind: ProviderLink.Kind, id: String)] = []
        if let own, let id = object["id"].string { ids.append((own, id)) }
        for reference in references {
            if let id = reference.paths.lazy.compactMap({ object[$0].id }).first { ids.append((reference.kind, id)) }
        }
        if own != .stripeSubscription, !ids.contains(where: { $0.kind == .stripeSubscription }),
           let subscription = metadata("subscription_id", in: object) {
            ids.append((.stripeSubscription, subscription))
        }
        return ids
    }

    /// The id this object references with `kind` (or its own id, when that is its kind).
    func id(_ kind: ProviderLink.Kind, in object: JSONValue) -> String? {
        ids(in: object).first { $0.kind == kind }?.id
    }

    /// The first `key` in ``metadataPaths``.
    func metadata(_ key: String, in object: JSONValue) -> String? {
        metadataPaths.lazy.compactMap { object["\($0).\(key)"].string }.first
    }

    /// The transaction key the object itself names, by ``payment``.
    func paymentID(in object: JSONValue) -> String? {
        payment.lazy.compactMap { source -> String? in
            switch source {
            case .own: object["id"].string
            case .reference(let kind): id(kind, in: object)
            }
        }.first
    }

    /// The user the object names: metadata `user_id`, then ``userPaths``; `nil` for an id
    /// ``UserIDRule`` refuses (``refusedUserID(in:)``).
    func userID(in object: JSONValue) -> String? {
        namedUserID(in: object).flatMap { UserIDRule.problem(with: $0) == nil ? $0 : nil }
    }

    /// Why the user id the object names is refused (a control character, too long), if it is:
    /// such an object is recorded and never applied as any user.
    func refusedUserID(in object: JSONValue) -> String? {
        namedUserID(in: object).flatMap(UserIDRule.problem(with:))
    }

    private func namedUserID(in object: JSONValue) -> String? {
        metadata("user_id", in: object) ?? userPaths.lazy.compactMap { object[$0].string }.first
    }

    /// The app's product the object names (``productChangedBy`` explains the order).
    func productID(in object: JSONValue, previousAttributes: JSONValue) -> String? {
        let fromPrice = metadataPaths.first.flatMap { object["\($0).product_id"].string }
        let changedInPlace = productChangedBy.contains { path in
            previousAttributes[path].string.map { $0 != object[path].string } ?? false
        } && previousAttributes["metadata"] == .null
        if changedInPlace, let id = fromPrice ?? productPaths.lazy.compactMap({ object[$0].id }).first { return id }
        return metadata("product_id", in: object) ?? productPaths.lazy.compactMap { object[$0].id }.first
    }

    /// Whether the object carries the app's own metadata (a user, product or subscription it named).
    func namesTheApp(_ object: JSONValue) -> Bool {
        ["user_id", "product_id", "subscription_id"].contains { metadata($0, in: object) != nil } || userPaths.contains { object[$0].string != nil }
    }
}
