// SPDX-License-Identifier: Apache-2.0

/// Where a raw event came from; also the job kind that picks the worker's handler.
public enum EventSource: String, Sendable, CaseIterable, Codable {
    /// A Stripe webhook event.
    case stripe
    /// An App Store Server Notification V2.
    case apple
    /// A StoreKit 2 transaction that an app synced through the API.
    case storekit
}
