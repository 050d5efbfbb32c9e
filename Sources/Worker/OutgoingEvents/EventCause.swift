// SPDX-License-Identifier: Apache-2.0
import Shared

/// What made an outgoing event: the provider event applied and how it reached Sluice.
struct EventCause: Sendable, Equatable {
    /// How the change came about.
    enum Origin: String, Sendable, CaseIterable {
        /// A provider's webhook (Stripe event, App Store Server Notification).
        case webhook
        /// A StoreKit transaction the app synced.
        case sync
        /// Fetched from the provider's API by recovery.
        case recovery
        /// The provider's current answer, asked by reconciliation.
        case reconciliation
        /// `worker rebuild` recomputed the state from stored events.
        case rebuild
        /// The paid period ran out with no ending event.
        case clock
        /// The app's server registered the purchase's `appAccountToken` for a user.
        case registration
        /// The app's server spent or deposited through the balance API.
        case api
        /// An operator's `worker balance adjust`.
        case `operator`
    }

    /// `stripe`, `apple` or `google_play` (``StoreProvider``).
    var provider: String
    /// The provider's event type (`DID_RENEW`, `charge.refunded`); `nil` for the clock and rebuilds.
    var eventType: String?
    /// The provider's id of it (Stripe event id, Apple `notificationUUID`, StoreKit `transactionId`).
    var eventID: String?
    var origin: Origin

    /// The body's `cause` (docs/webhooks.md): nothing left out, `null` when unknown.
    var members: [JSONTextMember] {
        [
            JSONTextMember("provider", provider), JSONTextMember("event_type", eventType), JSONTextMember("event_id", eventID),
            JSONTextMember("origin", origin.rawValue),
        ]
    }

    /// The cause of applying a stored event (`events` row): its source, type, id and origin.
    init(job: ClaimedJob) {
        self.init(source: job.kind, type: job.eventType, externalID: job.externalID, origin: job.origin)
    }

    /// The cause of applying the `events` row of this source, type, external id and origin.
    init(source kind: String, type: String?, externalID: String?, origin stored: String?) {
        let source = EventSource(rawValue: kind)
        provider = StoreProvider(source).rawValue
        eventType = type
        eventID = externalID
        switch stored {
        case "recovery": origin = .recovery
        case "reconciliation": origin = .reconciliation
        default:
            switch source {
            case .storekit: origin = .sync
            case .playPurchase where type == PlayNotificationType.syncEventType: origin = .sync
            case .account: origin = .registration
            default: origin = .webhook
            }
        }
    }

    init(provider: String, eventType: String? = nil, eventID: String? = nil, origin: Origin) {
        self.provider = provider
        self.eventType = eventType
        self.eventID = eventID
        self.origin = origin
    }

    /// The provider of an entitlement's state.
    static func provider(of source: PurchaseSource) -> String {
        StoreProvider(source).rawValue
    }
}
