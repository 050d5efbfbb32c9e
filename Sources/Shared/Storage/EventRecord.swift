// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import NIOCore

/// A verified raw event as the receiver stores it: the body (Stripe's byte for byte, Apple's signed
/// JWS unchanged in a canonical wrapper), plus the few fields
/// the worker and operators need without parsing it again.
public struct EventRecord: Sendable, Equatable {
    public var source: EventSource
    /// The provider's idempotency key: Stripe event id, Apple `notificationUUID`, StoreKit `transactionId`.
    public var externalID: String
    /// Stripe `type`, Apple `notificationType`, or `STOREKIT_TRANSACTION`.
    public var type: String
    /// Apple `subtype`.
    public var subtype: String?
    /// `live`/`test` for Stripe, `Production`/`Sandbox` for Apple.
    public var environment: String?
    /// The provider's time for the event: Stripe `created`, Apple `signedDate`.
    public var eventTime: Date?
    /// The entity whose events are applied in order: the Stripe object id, Apple `originalTransactionId`.
    public var orderingKey: String?
    /// The request body exactly as received and verified.
    public var payload: ByteBuffer
    /// How it reached the queue.
    public var origin: EventOrigin = .webhook
    /// ``EventProof``'s HMAC of the row, when `EVENT_SIGNING_KEY` is set.
    public var proof: [UInt8]?

    public init(
        source: EventSource, externalID: String, type: String, subtype: String? = nil, environment: String? = nil,
        eventTime: Date? = nil, orderingKey: String? = nil, payload: ByteBuffer
    ) {
        self.source = source
        self.externalID = externalID
        self.type = type
        self.subtype = subtype
        self.environment = environment
        self.eventTime = eventTime
        self.orderingKey = orderingKey
        self.payload = payload
    }

    /// The idempotency key of the events queue.
    public var key: EventKey { EventKey(source: source, externalID: externalID) }
}

/// How an event reached the queue (`events.origin`).
public enum EventOrigin: String, Sendable, Equatable, CaseIterable {
    /// Delivered by the provider (or synced by the app) and verified on arrival.
    case webhook
    /// Fetched from the provider's API by recovery: an Apple notification it could not deliver, a
    /// Stripe event (which carries no signature there: the API call itself was authenticated).
    case recovery
    /// Made by reconciliation from the provider's current answer.
    case reconciliation
}

/// `(source, external_id)`: one raw event, however often it is delivered.
public struct EventKey: Sendable, Hashable {
    public var source: EventSource
    public var externalID: String

    public init(source: EventSource, externalID: String) {
        self.source = source
        self.externalID = externalID
    }
}

/// What storing an event did.
public enum StoreResult: Sendable, Equatable {
    /// A new row was committed.
    case stored
    /// A row with the same key was already there (or committed by a concurrent copy); nothing new.
    case duplicate
}
