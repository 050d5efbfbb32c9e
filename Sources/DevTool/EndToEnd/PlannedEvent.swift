// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation

/// One event the end-to-end run sends, with the effect it must have: a user of its own, so the
/// read API shows exactly one transaction for it once applied, however often it was delivered.
struct PlannedEvent: Sendable {
    enum Provider: String, Sendable { case stripe, apple, play }

    let provider: Provider
    /// The `user_id` the read API knows the buyer by.
    let user: String
    let productID: String
    /// Apple only: what the downstream sink must receive at least once.
    let notificationUUID: String?
    /// The request path on ingest.
    let path: String
    /// Stripe: the event body, signed afresh on each attempt as Stripe does; Apple: the whole body.
    let body: Data
    /// Sent a second time once acknowledged, as Stripe and Apple redeliver.
    let redeliver: Bool
    /// Google Play: the purchase token the push points at, which the worker must acknowledge once.
    var playToken: String?
    /// Verifies and is stored, but names no user, so applying it fails every time: it must end
    /// dead-lettered after `MAX_ATTEMPTS` without holding up the others.
    var poison = false
}

/// Makes the run's events: a share of Apple notifications, a share of Google Play pushes (their
/// purchases set in the Google stand-in as they are planned), the rest Stripe payments.
struct EventPlanner: Sendable {
    let runID: String
    let signer: AppleJWSSigner
    let bundleID: String
    /// One in `appleEvery` events is an Apple notification.
    let appleEvery: Int
    /// One in `redeliverEvery` events is sent twice.
    let redeliverEvery: Int
    /// Indexes of poison events.
    var poisonIndexes: Set<Int> = []
    /// One in `playEvery` events (offset by one) is a Google Play push, when `play` is set.
    var playEvery = 0
    /// The Play Developer API stand-in whose purchases the pushes point at.
    var play: GooglePlayAPIStandIn?

    func event(_ index: Int) throws -> PlannedEvent {
        if poisonIndexes.contains(index) { return try poison(index) }
        let redeliver = redeliverEvery > 0 && index % redeliverEvery == redeliverEvery - 1
        if let play, playEvery > 0, index % playEvery == 1 {
            let (token, user) = ("e2e-play-\(runID)-\(index)", "e2e_play_\(runID)_\(index)")
            play.setSubscription(token, SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", product: "pro.play", expiry: Date().addingTimeInterval(30 * 86_400),
                order: "GPA.e2e-\(runID)-\(index)", account: user))
            let body = try SamplePlayNotifications.push(SamplePlayNotifications.subscription(4, token: token), messageID: "e2e-\(runID)-\(index)")
            return PlannedEvent(
                provider: .play, user: user, productID: "pro.play", notificationUUID: nil, path: "/v1/webhooks/google-play", body: body,
                redeliver: redeliver, playToken: token)
        }
        if appleEvery > 0 && index % appleEvery == 0 {
            let token = UUID().uuidString.lowercased()
            let uuid = UUID().uuidString.lowercased()
            let transactionID = "\(Int.random(in: 2_000_000_000_000_000...2_999_999_999_999_999))"
            let transaction = SampleAppleTransaction(transactionId: transactionID, bundleId: bundleID, appAccountToken: token)
            let body = try signer.notificationBody(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: uuid, transaction: transaction,
                renewal: SampleAppleRenewalInfo(originalTransactionId: transactionID))
            return PlannedEvent(
                provider: .apple, user: token, productID: transaction.productId, notificationUUID: uuid,
                path: "/v1/webhooks/appstore-notifications?sandbox=true", body: body, redeliver: redeliver)
        }
        let user = "e2e_\(runID)_\(index)"
        // Each buyer is their own Stripe customer, as in real traffic. One customer for every buyer
        // (the sample's default `cus_1`) re-linked that customer at every event: one row every
        // applying transaction had to update, which made all of them wait for each other.
        let body = try SampleStripeEvents.event(
            id: "evt_e2e_\(runID)_\(index)", type: "payment_intent.succeeded",
            object: SampleStripeEvents.paymentIntent(
                id: "pi_e2e_\(runID)_\(index)", userID: user, productID: "pro.lifetime", customer: "cus_e2e_\(runID)_\(index)"))
        return PlannedEvent(
            provider: .stripe, user: user, productID: "pro.lifetime", notificationUUID: nil,
            path: "/v1/webhooks/stripe", body: body, redeliver: redeliver)
    }

    /// A `payment_intent.succeeded` without `metadata.user_id` for a customer nobody knows.
    private func poison(_ index: Int) throws -> PlannedEvent {
        let body = try SampleStripeEvents.event(
            id: "evt_poison_\(runID)_\(index)", type: "payment_intent.succeeded",
            object: SampleStripeEvents.paymentIntent(
                id: "pi_poison_\(runID)_\(index)", userID: nil, customer: "cus_unknown_\(runID)_\(index)"))
        return PlannedEvent(
            provider: .stripe, user: "poison_\(runID)_\(index)", productID: "pro.lifetime", notificationUUID: nil,
            path: "/v1/webhooks/stripe", body: body, redeliver: false, poison: true)
    }
}
