// SPDX-License-Identifier: Apache-2.0
import Foundation
public import NIOCore
import NIOFoundationCompat

/// The few fields of a Stripe event that the queue needs; the worker parses the rest.
public struct StripeEventEnvelope: Decodable, Sendable, Equatable {
    public struct DataObject: Decodable, Sendable, Equatable {
        public struct Object: Decodable, Sendable, Equatable {
            public var id: String?
        }
        public var object: Object?
    }

    public var id: String
    public var object: String
    public var type: String
    public var created: Int64
    public var livemode: Bool?
    public var data: DataObject?

    /// Reads a verified body.
    ///
    /// - Throws: ``Rejection`` `malformed` when it is not a v1 Stripe event.
    public static func decode(_ body: ByteBuffer) throws(Rejection) -> StripeEventEnvelope {
        // The skim reads nearly every body Stripe sends; whatever it is unsure of, JSONDecoder decides.
        guard let envelope = skimmed(body) ?? decodedByJSONDecoder(body) else {
            throw Rejection(.malformed, "the body is not a Stripe event (needs id, object, type, created)")
        }
        guard envelope.object == "event" else {
            throw Rejection(.malformed, "object \"\(envelope.object.prefix(40))\" is not a v1 event; thin (v2) events are not supported")
        }
        guard !envelope.id.isEmpty, envelope.id.utf8.count <= 255, !envelope.type.isEmpty, envelope.type.utf8.count <= 255 else {
            throw Rejection(.malformed, "the event id or type is empty or too long")
        }
        return envelope
    }

    /// The envelope as the fast path (``StripeEnvelopeSkim``) reads it, or `nil` when it leaves the
    /// body to `JSONDecoder`. Apart from ``decode(_:)``, for tests and the fuzz target that check
    /// that both paths agree.
    @_spi(Testing) public static func skimmed(_ body: ByteBuffer) -> StripeEventEnvelope? {
        body.withUnsafeReadableBytes(StripeEnvelopeSkim.envelope(in:))
    }

    /// The envelope as `JSONDecoder` reads it, or `nil` when it cannot.
    @_spi(Testing) public static func decodedByJSONDecoder(_ body: ByteBuffer) -> StripeEventEnvelope? {
        try? JSONDecoder().decode(StripeEventEnvelope.self, from: body)
    }

    /// The queue row for this event.
    public func record(payload: ByteBuffer) -> EventRecord {
        EventRecord(
            source: .stripe, externalID: id, type: type, environment: livemode.map { $0 ? "live" : "test" },
            eventTime: Date(timeIntervalSince1970: TimeInterval(created)),
            orderingKey: data?.object?.id, payload: payload)
    }
}
