// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

@testable import Worker

/// The worker's JSON parser for stored Stripe events: what it reads, what it refuses, and that it
/// reads real documents as Foundation's parser does.
struct JSONValueParsingTests {
    static func parse(_ text: String) throws -> JSONValue {
        try JSONValue.parse(Data(text.utf8))
    }

    @Test(arguments: [
        (" null ", JSONValue.null),
        ("true", .bool(true)),
        ("false", .bool(false)),
        ("0", .number(0)),
        ("-0", .number(-0.0)),
        ("1712345678", .number(1_712_345_678)),
        ("-12.5e2", .number(-1_250)),
        ("1E-2", .number(0.01)),
        (#""""#, .string("")),
        (#""plain ✓""#, .string("plain ✓")),
        (#""\"\\\/\b\f\n\r\t""#, .string("\"\\/\u{8}\u{C}\n\r\t")),
        (#""\u00e9\u2603""#, .string("é☃")),
        (#""\ud83d\ude00 pair""#, .string("😀 pair")),
        ("[]", .array([])),
        ("{}", .object([:])),
        (#"[1, "a", [null], {"k": false}]"#, .array([.number(1), .string("a"), .array([.null]), .object(["k": .bool(false)])])),
        (#"{"a": {"b": [true]}, "c": "d"}"#, .object(["a": .object(["b": .array([.bool(true)])]), "c": .string("d")])),
        (#"{"dup": 1, "dup": 2}"#, .object(["dup": .number(2)])),
        ("\t\r\n[ 1 ,\n2 ]\n", .array([.number(1), .number(2)])),
    ])
    func validTextIsRead(text: String, expected: JSONValue) throws {
        #expect(try Self.parse(text) == expected)
    }

    @Test(arguments: [
        "", " ", "{", "[", "[1,]", "[,1]", #"{"a":1,}"#, #"{"a" 1}"#, #"{a:1}"#, "[1] 2", "01", "1.", ".5", "-", "1e", "+1",
        "tru", "nul", "True", #""open"#, #""\x""#, #""\u12""#, #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#,
        "\"raw\ncontrol\"", "NaN", "Infinity",
    ])
    func malformedTextIsRefused(text: String) {
        #expect(throws: JSONSyntaxError.self) { try Self.parse(text) }
    }

    @Test func invalidUTF8InAStringIsRefused() {
        #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(Data([0x22, 0xFF, 0xFE, 0x22])) }
    }

    @Test func nestingIsBounded() throws {
        let deepest = String(repeating: "[", count: JSONValue.maximumDepth) + String(repeating: "]", count: JSONValue.maximumDepth)
        #expect(throws: Never.self) { try Self.parse(deepest) }
        #expect(throws: JSONSyntaxError.self) { try Self.parse("[" + deepest + "]") }
    }

    /// Stripe's own sample events and Apple's decoded payload models, read as Foundation reads them.
    @Test(arguments: [
        "stripe/stripe-node-EVENT_PAYLOAD_STRING.json", "stripe/stripe-python-DUMMY_WEBHOOK_PAYLOAD.json",
        "stripe/stripe-python-DUMMY_V2_WEBHOOK_PAYLOAD.json", "apple/models/signedNotification.json",
        "apple/models/signedRenewalInfo.json", "apple/models/signedTransaction.json",
    ])
    func realDocumentsAreReadAsFoundationReadsThem(file: String) throws {
        let data = try Data(contentsOf: Vectors.url(file))
        let foundation = try JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed)
        let difference = Self.firstDifference(try JSONValue.parse(data), foundation, at: "$")
        #expect(difference == nil)
    }

    /// The path of the first value the two parsers read differently, and both values; `nil` if none.
    static func firstDifference(_ mine: JSONValue, _ theirs: Any, at path: String) -> String? {
        switch (mine, theirs) {
        case let (.object(object), theirs as [String: Any]):
            guard Set(object.keys) == Set(theirs.keys) else { return "\(path): keys \(object.keys.sorted()) and \(theirs.keys.sorted())" }
            return object.keys.sorted().lazy.compactMap { key in firstDifference(object[key]!, theirs[key]!, at: "\(path).\(key)") }.first
        case let (.array(array), theirs as [Any]):
            guard array.count == theirs.count else { return "\(path): \(array.count) and \(theirs.count) elements" }
            return zip(array, theirs).enumerated().lazy.compactMap { index, pair in firstDifference(pair.0, pair.1, at: "\(path)[\(index)]") }.first
        case (.null, is NSNull): return nil
        case let (.string(string), theirs as String): return string == theirs ? nil : "\(path): \(string) and \(theirs)"
        case let (.bool(bool), theirs as Bool): return bool == theirs ? nil : "\(path): \(bool) and \(theirs)"
        case let (.number(number), theirs as NSNumber): return number == theirs.doubleValue ? nil : "\(path): \(number) and \(theirs)"
        default: return "\(path): \(mine) and \(theirs) (\(type(of: theirs)))"
        }
    }

    @Test(arguments: [
        (#"[]"#, "it is not an object"),
        (#"{"id":"evt_1","type":"x","created":1}"#, "it has no data.object"),
        (#"{"id":"evt_1","type":"x","created":1.5,"data":{"object":{}}}"#, "created is not a whole number of seconds"),
        (#"{"type":"x","created":1,"data":{"object":{}}}"#, "it has no id or type"),
        (#"{"id":"evt_1","type":"x","created":1,"livemode":"yes","data":{"object":{}}}"#, "livemode has the wrong type"),
    ])
    func aStoredBodyThatIsNotAnEventSaysWhy(body: String, reason: String) {
        #expect {
            _ = try StripeEvent(eventID: 1, body: Data(body.utf8))
        } throws: { error in
            (error as? StripeEvent.NotAnEvent)?.reason == reason
        }
    }

    @Test func anEnvelopeIsReadWithItsDefaults() throws {
        let event = try StripeEvent(eventID: 7, body: Data(#"{"id":"evt_1","type":"customer.created","created":1700000000,"account":null,"data":{"object":{"id":"cus_1"}}}"#.utf8))
        #expect(event.id == "evt_1" && event.type == "customer.created" && event.created == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(event.account == nil && event.livemode && event.apiVersion == nil && event.previousAttributes == .null)
        #expect(event.object["id"].string == "cus_1")
    }
}
