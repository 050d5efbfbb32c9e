// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// Stripe event envelopes shaped like the real ones (`"object":"event"`, `api_version`,
/// `data.object`, `livemode`, `pending_webhooks`, `request`).
public enum SampleStripeEvents {
    /// An event body around `object`.
    ///
    /// - Parameters:
    ///   - id: the event id (`evt_…`), Stripe's idempotency key.
    ///   - type: such as `payment_intent.succeeded`.
    ///   - object: the `data.object` dictionary (a PaymentIntent, Subscription, Charge…).
    ///   - previousAttributes: `data.previous_attributes`, for `*.updated` events.
    ///   - apiVersion: the version the object is rendered in (the endpoint's).
    ///   - account: the connected account, for Connect events.
    public static func event(
        id: String, type: String, created: Date = Date(), object: [String: Any],
        previousAttributes: [String: Any]? = nil, livemode: Bool = false, apiVersion: String = "2024-06-20", account: String? = nil
    ) throws -> Data {
        var data: [String: Any] = ["object": object]
        if let previousAttributes { data["previous_attributes"] = previousAttributes }
        var event: [String: Any] = [
            "id": id, "object": "event", "api_version": apiVersion, "type": type,
            "created": Int64(created.timeIntervalSince1970), "livemode": livemode, "pending_webhooks": 1,
            "request": ["id": NSNull(), "idempotency_key": NSNull()], "data": data,
        ]
        if let account { event["account"] = account }
        return try JSONSerialization.data(withJSONObject: event, options: [.sortedKeys])
    }

    /// A succeeded PaymentIntent for a one-time purchase, with the metadata the checkout side sets.
    public static func paymentIntent(
        id: String, amount: Int = 999, currency: String = "usd", status: String = "succeeded",
        userID: String? = "user_1", productID: String? = "pro.lifetime", productType: String? = "non_consumable",
        customer: String? = "cus_1", latestCharge: String? = nil
    ) -> [String: Any] {
        var metadata: [String: Any] = [:]
        metadata["user_id"] = userID
        metadata["product_id"] = productID
        metadata["product_type"] = productType
        return [
            "id": id, "object": "payment_intent", "amount": amount, "amount_received": status == "succeeded" ? amount : 0,
            "currency": currency, "status": status, "customer": customer ?? NSNull(), "metadata": metadata,
            "latest_charge": latestCharge ?? NSNull(), "livemode": false, "created": Int64(Date().timeIntervalSince1970),
        ]
    }
}
