// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import NIOCore
@_spi(Testing) @testable import Shared
import Testing

/// The envelope's fast path (`StripeEnvelopeSkim`) against `JSONDecoder`: it must read the bodies
/// Stripe sends, and whatever it reads, `JSONDecoder` must read the same way.
struct StripeEnvelopeSkimTests {
    static let created = Date(timeIntervalSince1970: 1_700_000_000)

    /// Events shaped as Stripe sends them, several kinds of `data.object`.
    static func sampleEvents() throws -> [Data] {
        [
            try SampleStripeEvents.event(
                id: "evt_1", type: "payment_intent.succeeded", created: created,
                object: SampleStripeEvents.paymentIntent(id: "pi_1", latestCharge: "ch_1")),
            try SampleStripeEvents.event(
                id: "evt_2", type: "customer.subscription.updated", created: created,
                object: ["id": "sub_1", "object": "subscription", "status": "active", "items": ["object": "list", "data": [
                    ["id": "si_1", "price": ["id": "price_1", "unit_amount": 999, "recurring": ["interval": "month"]]],
                ]], "cancel_at_period_end": false, "current_period_end": 1_702_592_000, "discount": NSNull()],
                previousAttributes: ["status": "trialing"], livemode: true, account: "acct_1"),
            try SampleStripeEvents.event(
                id: "evt_3", type: "charge.refunded", created: created,
                object: ["id": "ch_1", "object": "charge", "amount_refunded": 999, "description": "Zoë's \"pro\" plan — 1 €\n",
                         "refunds": ["data": [], "has_more": false], "ratio": 0.5, "exponent": -1.25e-3]),
        ]
    }

    @Test func aRealShapedEventIsReadByTheSkimAsJSONDecoderReadsIt() throws {
        for event in try Self.sampleEvents() {
            let body = ByteBuffer(bytes: event)
            let skimmed = try #require(StripeEventEnvelope.skimmed(body))
            #expect(skimmed == StripeEventEnvelope.decodedByJSONDecoder(body))
        }
        let refund = try #require(StripeEventEnvelope.skimmed(ByteBuffer(bytes: try Self.sampleEvents()[2])))
        #expect(refund == StripeEventEnvelope(
            id: "evt_3", object: "event", type: "charge.refunded", created: 1_700_000_000, livemode: false,
            data: .init(object: .init(id: "ch_1"))))
    }

    /// Bodies the skim reads, with what it must read; `JSONDecoder` must agree on each.
    @Test(arguments: [
        (#"{"id":"evt_1","object":"event","type":"t","created":5}"#, "evt_1 t 5 nil nil"),
        (" \r\n\t{ \"id\" : \"evt_1\" , \"object\":\"event\",\"type\":\"t\",\"created\":-0 } \n", "evt_1 t 0 nil nil"),
        (#"{"id":"e","object":"event","type":"t","created":-5,"livemode":null,"data":null}"#, "e t -5 nil nil"),
        (#"{"id":"e","object":"event","type":"t","created":1,"livemode":true,"data":{}}"#, "e t 1 true data"),
        (#"{"id":"e","object":"event","type":"t","created":1,"data":{"object":null}}"#, "e t 1 nil data"),
        (#"{"id":"e","object":"event","type":"t","created":1,"data":{"object":{"id":null}}}"#, "e t 1 nil data.object"),
        // Escapes in values and keys it passes over; objects with an `id` elsewhere.
        (#"{"desc":"a\"b \u00e9\n\\","id":"e","object":"event","type":"t","created":1,"data":{"x":[1,{"id":"no"}],"object":{"k":{"i\u0064":"no","id":"no"},"id":"cus_1"}}}"#,
         "e t 1 nil cus_1"),
        (#"{"id":"e","object":"event","type":"t","created":9223372036854775807,"n":[0,-0.5e+10,1E2,true,false,null,[],{}]}"#,
         "e t 9223372036854775807 nil nil"),
        (#"{"id":"é😀","object":"event","type":"t","created":1}"#, "é😀 t 1 nil nil"),
    ])
    func aBodyTheSkimReads(json: String, expected: String) throws {
        let body = ByteBuffer(string: json)
        let skimmed = try #require(StripeEventEnvelope.skimmed(body))
        #expect(Self.summary(skimmed) == expected)
        #expect(StripeEventEnvelope.decodedByJSONDecoder(body) == skimmed)
    }

    /// Bodies the skim is not sure of: `JSONDecoder` decides (and refuses the ones that are not
    /// JSON or not an envelope).
    @Test(arguments: [
        #"{"\u0069d":"e","object":"event","type":"t","created":1}"#,             // an escaped key that is "id"
        #"{"id":"e\u0031","object":"event","type":"t","created":1}"#,            // an escape in a field taken
        #"{"id":"e","object":"event","type":"t","created":1.0}"#,                // not a plain integer
        #"{"id":"e","object":"event","type":"t","created":1e9}"#,
        #"{"id":"e","object":"event","type":"t","created":9223372036854775808}"#, // past Int64
        #"{"id":"e","id":"f","object":"event","type":"t","created":1}"#,         // a key twice
        #"{"id":"e","object":"event","type":"t","created":1,"data":{"object":{"id":"a","id":"b"}}}"#,
        #"{"id":"e","object":"event","type":"t","created":1,"x":"\ud83d\ude00"}"#, // a surrogate escape
        #"{"id":"e","object":"event","type":"t","created":1,"data":"x"}"#,      // a field of another type
        #"{"id":"e","object":"event","type":"t","created":1,"livemode":"yes"}"#,
        #"{"id":"e","object":"event","type":"t","created":1,"data":{"object":{"id":7}}}"#,
        #"{"id":null,"object":"event","type":"t","created":1}"#,
        #"{"object":"event","type":"t","created":1}"#,                           // a field missing
        #"{"id":"e","object":"event","type":"t","created":1} x"#,                // not only JSON
        #"{"id":"e","object":"event","type":"t","created":1,}"#,
        #"{"id":"e","object":"event","type":"t","created":01}"#,
        #"{"id":"e","object":"event","type":"t","created":1,"x":[1,]}"#,
        #"{"id":"e","object":"event","type":"t","created":1,"x":"\x"}"#,
        "\u{FEFF}{\"id\":\"e\",\"object\":\"event\",\"type\":\"t\",\"created\":1}",  // a byte-order mark
        "{\"id\":\"e\",\"object\":\"event\",\"type\":\"t\",\"created\":1,\"x\":\"\t\"}", // a raw control character
        String(repeating: "[", count: 70) + String(repeating: "]", count: 70),
        "{\"id\":\"e\",\"object\":\"event\",\"type\":\"t\",\"created\":1,\"x\":" + String(repeating: "[", count: 70)
            + String(repeating: "]", count: 70) + "}",                           // deeper than the skim goes
        "",
        "[]",
    ])
    func aBodyTheSkimLeavesToJSONDecoder(json: String) {
        #expect(StripeEventEnvelope.skimmed(ByteBuffer(string: json)) == nil)
    }

    @Test func bytesThatAreNotUTF8AreLeftToJSONDecoder() {
        let prefix = Array(#"{"id":"e","object":"event","type":"t","created":1,"x":""#.utf8)
        // A lone continuation byte, an overlong '/', a UTF-16 surrogate, past U+10FFFF, a cut sequence.
        for bad: [UInt8] in [[0x80], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82]] {
            let body = ByteBuffer(bytes: prefix + bad + Array(#""}"#.utf8))
            #expect(StripeEventEnvelope.skimmed(body) == nil, "\(bad)")
        }
    }

    /// Thousands of broken copies of real-shaped events (a byte removed, replaced or inserted, the
    /// body cut): whenever the skim reads one, `JSONDecoder` reads the same envelope.
    @Test func whateverTheSkimReadsOfABrokenBodyJSONDecoderReadsTheSame() throws {
        var generator = SplitMix64(seed: 24)
        let significant = Array(#"{}[]":,\-+0123456789.eEtrufalsn u"#.utf8) + [0x00, 0x09, 0x0A, 0x80, 0xC3, 0xE2, 0xF0, 0xFF]
        var read = 0, left = 0
        for event in try Self.sampleEvents() {
            for _ in 0..<1_500 {
                var bytes = Array(event)
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    let position = Int.random(in: 0..<bytes.count, using: &generator)
                    switch Int.random(in: 0..<4, using: &generator) {
                    case 0: bytes.remove(at: position)
                    case 1: bytes[position] = significant.randomElement(using: &generator)!
                    case 2: bytes.insert(significant.randomElement(using: &generator)!, at: position)
                    default: bytes.removeLast(Int.random(in: 0...min(3, bytes.count - 1), using: &generator))
                    }
                }
                let body = ByteBuffer(bytes: bytes)
                if let skimmed = StripeEventEnvelope.skimmed(body) {
                    read += 1
                    #expect(StripeEventEnvelope.decodedByJSONDecoder(body) == skimmed, "\(String(decoding: bytes, as: UTF8.self))")
                } else {
                    left += 1
                }
            }
        }
        // Both outcomes occur, so the comparison above is not empty.
        #expect(read > 500 && left > 500, "read \(read), left \(left)")
    }

    private static func summary(_ envelope: StripeEventEnvelope) -> String {
        let data = envelope.data.map { data in data.object.map { $0.id ?? "data.object" } ?? "data" } ?? "nil"
        return "\(envelope.id) \(envelope.type) \(envelope.created) \(envelope.livemode.map(String.init) ?? "nil") \(data)"
    }
}

/// A seeded generator, so that a failure can be run again.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
