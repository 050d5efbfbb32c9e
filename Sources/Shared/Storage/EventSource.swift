// SPDX-License-Identifier: Apache-2.0

/// Where a raw event came from; also the job kind that picks the worker's handler.
public enum EventSource: String, Sendable, CaseIterable, Codable {
    /// A Stripe webhook event.
    case stripe
    /// An App Store Server Notification V2.
    case apple
    /// A StoreKit 2 transaction that an app synced through the API.
    case storekit
    /// A change the app's server made to its users: an `appAccountToken` registered for a user
    /// (``AppAccountTokens``), whose stored Apple state the worker then moves to that user.
    case account
    /// A Google Play real-time developer notification pushed by Cloud Pub/Sub: a pointer to a
    /// purchase, whose state the worker fetches and stores as a ``playPurchase`` row.
    case play
    /// A Google Play purchase as the Play Developer API answered for it (``PlayPurchaseRecord``),
    /// or a voided purchase: what the worker applies.
    case playPurchase = "play_purchase"
}
