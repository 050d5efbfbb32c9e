// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The events Stripe sends for one Stripe Billing subscription bought through Checkout and renewed,
/// with every object shaped as Stripe's API reference documents it for the endpoint's API version.
///
/// Only the Checkout Session and the Subscription carry the app's metadata (the app sets them when
/// it creates the session, `subscription_data.metadata`); Stripe Billing's own Invoices,
/// PaymentIntents, Charges and InvoicePayments carry none.
struct StripeBillingTraffic {
    /// How objects are rendered: before `2025-03-31.basil`, or from it on.
    enum Shape: String, CaseIterable, Sendable, CustomStringConvertible {
        case preBasil = "2024-06-20"
        case basil = "2025-03-31.basil"
        var description: String { rawValue }
    }

    /// One event, its object kept as JSON so that it can cross into the test's concurrent code.
    struct Event: Sendable {
        var type: String
        var created: Date
        private var objectJSON: Data
        private var previousJSON: Data?

        init(type: String, created: Date, object: [String: Any], previousAttributes: [String: Any]? = nil) {
            self.type = type
            self.created = created
            // The fixtures are JSON values built above: serialising them cannot fail.
            self.objectJSON = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            self.previousJSON = previousAttributes.map { try! JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }
        }

        var object: [String: Any] { try! JSONSerialization.jsonObject(with: objectJSON) as! [String: Any] }
        var previousAttributes: [String: Any]? { previousJSON.map { try! JSONSerialization.jsonObject(with: $0) as! [String: Any] } }
    }

    var shape: Shape
    var user = "user_b"
    var product = "pro.monthly"
    var subscription = "sub_b"
    var customer = "cus_b"
    var amount = 999
    /// The first period starts 61 days ago, so the third (the second renewal) is in force now.
    var start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 61 * 86_400).rounded(.down))

    static let period: TimeInterval = 30 * 86_400

    func periodStart(_ index: Int) -> Date { start.addingTimeInterval(Double(index) * Self.period) }
    func periodEnd(_ index: Int) -> Date { periodStart(index + 1) }
    func invoice(_ index: Int) -> String { "in_b\(index)" }
    func paymentIntent(_ index: Int) -> String { "pi_b\(index)" }
    func charge(_ index: Int) -> String { "ch_b\(index)" }

    /// `false` for a subscription the platform sells outside the app: no app metadata anywhere.
    var ownedByTheApp = true

    var appMetadata: [String: Any] { ownedByTheApp ? ["user_id": user, "product_id": product] : [:] }

    // MARK: The whole story

    /// Checkout, then `renewals` renewals: every event Stripe sends for them, in the order it sends them.
    func events(renewals: Int) -> [Event] {
        purchase() + (0..<renewals).flatMap { renewal($0 + 1) }
    }

    /// The events of a Checkout purchase: the subscription, its first invoice and its payment.
    func purchase() -> [Event] {
        let t = periodStart(0)
        return [
            Event(type: "customer.subscription.created", created: t, object: subscriptionObject(period: 0, status: "incomplete")),
            Event(type: "invoice.created", created: t, object: invoiceObject(0, status: "draft")),
            Event(type: "invoice.finalized", created: t, object: invoiceObject(0, status: "open")),
            Event(type: "payment_intent.created", created: t, object: paymentIntentObject(0, status: "requires_payment_method")),
        ] + payment(0, at: t.addingTimeInterval(1)) + [
            Event(type: "customer.subscription.updated", created: t.addingTimeInterval(1),
                  object: subscriptionObject(period: 0, status: "active"), previousAttributes: ["status": "incomplete"]),
            Event(type: "checkout.session.completed", created: t.addingTimeInterval(2), object: checkoutSessionObject()),
        ]
    }

    /// The events of renewal `index`: the period moves, a new invoice is created, finalized an
    /// hour later and paid.
    func renewal(_ index: Int) -> [Event] {
        let t = periodStart(index)
        var previous: [String: Any] = ["latest_invoice": invoice(index - 1)]
        switch shape {
        case .preBasil:
            previous["current_period_start"] = Int(periodStart(index - 1).timeIntervalSince1970)
            previous["current_period_end"] = Int(periodEnd(index - 1).timeIntervalSince1970)
        case .basil:
            previous["items"] = subscriptionObject(period: index - 1, status: "active")["items"]
        }
        return [
            Event(type: "customer.subscription.updated", created: t, object: subscriptionObject(period: index, status: "active"),
                  previousAttributes: previous),
            Event(type: "invoice.created", created: t, object: invoiceObject(index, status: "draft")),
            Event(type: "invoice.finalized", created: t.addingTimeInterval(3_600), object: invoiceObject(index, status: "open")),
            Event(type: "payment_intent.created", created: t.addingTimeInterval(3_600),
                  object: paymentIntentObject(index, status: "requires_confirmation")),
        ] + payment(index, at: t.addingTimeInterval(3_601))
    }

    /// A paid invoice: its PaymentIntent and Charge succeeded, the InvoicePayment and the invoice paid.
    func payment(_ index: Int, at t: Date) -> [Event] {
        [
            Event(type: "payment_intent.succeeded", created: t, object: paymentIntentObject(index, status: "succeeded")),
            Event(type: "charge.succeeded", created: t, object: chargeObject(index)),
            Event(type: "invoice_payment.paid", created: t, object: invoicePaymentObject(index)),
            Event(type: "invoice.paid", created: t, object: invoiceObject(index, status: "paid")),
            Event(type: "invoice.payment_succeeded", created: t, object: invoiceObject(index, status: "paid")),
        ]
    }

    /// The full refund of invoice `index`'s charge, some days after it was paid.
    func refund(_ index: Int) -> Event {
        var charge = chargeObject(index)
        charge["amount_refunded"] = amount
        charge["refunded"] = true
        return Event(type: "charge.refunded", created: periodStart(index).addingTimeInterval(3 * 86_400), object: charge)
    }

    // MARK: Objects

    func subscriptionObject(period index: Int, status: String) -> [String: Any] {
        let start = Int(periodStart(index).timeIntervalSince1970)
        let end = Int(periodEnd(index).timeIntervalSince1970)
        var item: [String: Any] = [
            "id": "si_b", "object": "subscription_item", "quantity": 1, "subscription": subscription,
            "price": ["id": "price_pro_monthly", "object": "price", "product": "prod_pro", "lookup_key": NSNull(), "metadata": [String: Any](),
                      "recurring": ["interval": "month", "interval_count": 1], "unit_amount": amount, "currency": "usd"],
        ]
        var object: [String: Any] = [
            "id": subscription, "object": "subscription", "status": status, "customer": customer, "livemode": false,
            "cancel_at_period_end": false, "cancel_at": NSNull(), "canceled_at": NSNull(), "pause_collection": NSNull(),
            "start_date": Int(periodStart(0).timeIntervalSince1970), "trial_end": NSNull(), "trial_start": NSNull(),
            "latest_invoice": invoice(index), "collection_method": "charge_automatically", "currency": "usd",
            "metadata": appMetadata,
        ]
        switch shape {
        case .preBasil:
            object["current_period_start"] = start
            object["current_period_end"] = end
        case .basil:
            item["current_period_start"] = start
            item["current_period_end"] = end
        }
        object["items"] = ["object": "list", "data": [item], "has_more": false, "url": "/v1/subscription_items?subscription=\(subscription)"]
        return object
    }

    func invoiceObject(_ index: Int, status: String) -> [String: Any] {
        let paid = status == "paid"
        let finalized = status != "draft"
        var line: [String: Any] = [
            "id": "il_b\(index)", "object": "line_item", "amount": amount, "currency": "usd", "quantity": 1,
            "period": ["start": Int(periodStart(index).timeIntervalSince1970), "end": Int(periodEnd(index).timeIntervalSince1970)],
            "metadata": [String: Any](),
        ]
        let opened = Int(periodStart(index).timeIntervalSince1970)
        let transitions: [String: Any] = [
            "finalized_at": finalized ? opened as Any : NSNull(), "paid_at": paid ? (opened + 3_601) as Any : NSNull(),
        ]
        var object: [String: Any] = [
            "id": invoice(index), "object": "invoice", "status": status, "customer": customer, "customer_email": "buyer@example.com",
            "billing_reason": index == 0 ? "subscription_create" : "subscription_cycle", "collection_method": "charge_automatically",
            "currency": "usd", "amount_due": amount, "amount_paid": paid ? amount : 0, "amount_remaining": paid ? 0 : amount,
            "livemode": false, "metadata": [String: Any](), "status_transitions": transitions,
        ]
        // For a renewal, the invoice's own period is the one that just ended (its lines say what it pays for).
        object["period_start"] = Int(periodStart(max(index - 1, 0)).timeIntervalSince1970)
        object["period_end"] = Int((index == 0 ? periodStart(0) : periodEnd(index - 1)).timeIntervalSince1970)
        switch shape {
        case .preBasil:
            object["subscription"] = subscription
            object["subscription_details"] = ["metadata": appMetadata]
            object["payment_intent"] = finalized ? paymentIntent(index) : NSNull()
            object["charge"] = paid ? charge(index) : NSNull()
            object["paid"] = paid
            line["type"] = "subscription"
            line["subscription"] = subscription
            line["subscription_item"] = "si_b"
            line["price"] = ["id": "price_pro_monthly", "object": "price", "product": "prod_pro"]
        case .basil:
            object["parent"] = [
                "type": "subscription_details", "quote_details": NSNull(),
                "subscription_details": ["metadata": appMetadata, "subscription": subscription, "subscription_proration_date": NSNull()],
            ]
            line["parent"] = [
                "type": "subscription_item_details", "invoice_item_details": NSNull(),
                "subscription_item_details": ["subscription": subscription, "subscription_item": "si_b", "proration": false],
            ]
            line["pricing"] = ["type": "price_details", "price_details": ["price": "price_pro_monthly", "product": "prod_pro"]]
        }
        object["lines"] = ["object": "list", "data": [line], "has_more": false, "url": "/v1/invoices/\(invoice(index))/lines"]
        return object
    }

    func paymentIntentObject(_ index: Int, status: String) -> [String: Any] {
        let succeeded = status == "succeeded"
        var object: [String: Any] = [
            "id": paymentIntent(index), "object": "payment_intent", "amount": amount, "amount_received": succeeded ? amount : 0,
            "currency": "usd", "customer": customer, "status": status, "livemode": false, "metadata": [String: Any](),
            "description": index == 0 ? "Subscription creation" : "Subscription update",
            "latest_charge": succeeded ? charge(index) : NSNull(), "payment_method_types": ["card"],
        ]
        if shape == .preBasil { object["invoice"] = invoice(index) }
        return object
    }

    func chargeObject(_ index: Int) -> [String: Any] {
        var object: [String: Any] = [
            "id": charge(index), "object": "charge", "amount": amount, "amount_captured": amount, "amount_refunded": 0,
            "captured": true, "paid": true, "refunded": false, "status": "succeeded", "currency": "usd", "customer": customer,
            "payment_intent": paymentIntent(index), "livemode": false, "metadata": [String: Any](),
            "description": index == 0 ? "Subscription creation" : "Subscription update",
        ]
        if shape == .preBasil { object["invoice"] = invoice(index) }
        return object
    }

    func invoicePaymentObject(_ index: Int) -> [String: Any] {
        [
            "id": "inpay_b\(index)", "object": "invoice_payment", "amount_paid": amount, "amount_requested": amount,
            "created": Int(periodStart(index).timeIntervalSince1970), "currency": "usd", "invoice": invoice(index), "is_default": true,
            "livemode": false, "payment": ["type": "payment_intent", "payment_intent": paymentIntent(index)], "status": "paid",
            "status_transitions": ["canceled_at": NSNull(), "paid_at": Int(periodStart(index).timeIntervalSince1970) + 3_601],
        ]
    }

    func checkoutSessionObject() -> [String: Any] {
        [
            "id": "cs_b", "object": "checkout.session", "mode": "subscription", "status": "complete", "payment_status": "paid",
            "amount_total": amount, "amount_subtotal": amount, "currency": "usd", "customer": customer,
            "client_reference_id": ownedByTheApp ? user : NSNull(),
            "customer_details": ["email": "buyer@example.com"], "subscription": subscription, "invoice": invoice(0),
            "payment_intent": NSNull(), "setup_intent": NSNull(), "livemode": false, "metadata": appMetadata,
        ]
    }
}
