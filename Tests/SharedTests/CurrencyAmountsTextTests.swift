// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
@testable import Shared
import Testing
import TestSupport

/// ``CurrencyAmountsText`` reads what PostgreSQL writes for a ledger row's amounts itself, leaves
/// any other text to `JSONDecoder`, and answers for every text exactly as `JSONDecoder` does.
@Suite(.timeLimit(.minutes(2)))
struct CurrencyAmountsTextTests {
    /// What `JSONDecoder` answers: the amounts, or `nil` when it throws.
    static func decodedByFoundation(_ text: String) -> [String: Int64]? {
        try? JSONDecoder().decode([String: Int64].self, from: Data(text.utf8))
    }

    /// Texts in the form PostgreSQL writes: read without `JSONDecoder`, to the same amounts.
    @Test(arguments: [
        ("{}", [:]),
        (#"{"credits": 500}"#, ["credits": 500]),
        (#"{"gems": -1, "credits": 20}"#, ["gems": -1, "credits": 20]),
        (#"{"a": 0, "b": -0}"#, ["a": 0, "b": 0]),
        (#"{"max": 9223372036854775807, "min": -9223372036854775808}"#, ["max": .max, "min": .min]),
        ("{\"crédits\": 3, \"del\u{7F}\": 1}", ["crédits": 3, "del\u{7F}": 1]),
        (#"{"": 1}"#, ["": 1]),
    ] as [(String, [String: Int64])])
    func theFormPostgresWritesIsReadDirectly(text: String, amounts: [String: Int64]) throws {
        #expect(CurrencyAmountsText.decodeAsPostgresWrites(text) == amounts)
        #expect(try CurrencyAmountsText.decode(text) == amounts)
        #expect(Self.decodedByFoundation(text) == amounts)
    }

    /// Any other text is not read directly: `JSONDecoder` reads it or refuses it, as it would
    /// anyway.
    @Test(arguments: [
        #"{"cr\"edits": 1}"#, #"{"cr\u0065dits": 1}"#, "{\"a\u{1}\": 1}", "{\"tab\tkey\": 1}", #"{"credits":1}"#,
        #"{ "credits": 1 }"#, #"{"credits": 1,"gems": 2}"#, #"{"credits": 1.0}"#, #"{"credits": 1e2}"#, #"{"credits": 01}"#,
        #"{"credits": -00}"#, #"{"credits": -}"#, #"{"credits": "1"}"#, #"{"credits": 9223372036854775808}"#,
        #"{"credits": -9223372036854775809}"#, #"{"credits": 99999999999999999999}"#, #"{"credits": 1, "credits": 2}"#,
        "{\"\u{E9}\": 1, \"e\u{301}\": 2}", #"{"credits": 1} "#, #"{"credits": 1}}"#, #"{"credits": 1, }"#, #"{"credits" 1}"#,
        #"{"credits": null}"#, #"{"credits": 1"#, "{", "", "[]", "null", "{}x",
    ])
    func anyOtherTextIsLeftToJSONDecoder(text: String) throws {
        #expect(CurrencyAmountsText.decodeAsPostgresWrites(text) == nil, "read directly")
        #expect((try? CurrencyAmountsText.decode(text)) == Self.decodedByFoundation(text))
    }

    /// Random objects of random currencies, as PostgreSQL writes them out of `jsonb`: each read as
    /// `JSONDecoder` reads the object, directly unless PostgreSQL escaped a key (a quote, a
    /// backslash, a control character).
    @Test func randomObjectsAsPostgresWritesThemAreReadAsJSONDecoderReadsThem() async throws {
        try await TestDatabase.with { db in
            var generator = SystemRandomNumberGenerator()
            let characters = Array("abcdefghijklmnopqrstuvwxyz0123456789_é☃\"\\\t\u{7F}")
            var objects: [String] = []
            for _ in 0..<300 {
                var amounts: [String: Int64] = [:]
                for _ in 0..<Int.random(in: 0...6, using: &generator) {
                    let name = String((0..<Int.random(in: 1...12, using: &generator)).map { _ in characters.randomElement(using: &generator)! })
                    amounts[name] = [Int64.random(in: -1_000...1_000, using: &generator), .random(in: .min ... .max, using: &generator), 0]
                        .randomElement(using: &generator)!
                }
                objects.append(String(decoding: try JSONEncoder().encode(amounts), as: UTF8.self))
            }
            var read = 0
            var readDirectly = 0
            for try await (text, original) in try await db.client.query(
                "SELECT o::jsonb::text, o FROM unnest(\(objects)::text[]) AS o", logger: TestDatabase.logger
            ).decode((String, String).self) {
                let expected = try #require(Self.decodedByFoundation(original))
                #expect(try CurrencyAmountsText.decode(text) == expected, "\(text)")
                if !text.contains("\\") {
                    #expect(CurrencyAmountsText.decodeAsPostgresWrites(text) == expected, "\(text)")
                    readDirectly += 1
                }
                read += 1
            }
            #expect(read == objects.count)
            #expect(readDirectly > 0)
        }
    }
}
