// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

struct Base64URLTests {
    @Test func roundTripsEveryLengthAndByte() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let encoded = Base64URL.encode(bytes)
            #expect(!encoded.contains("=") && !encoded.contains("+") && !encoded.contains("/"))
            #expect(Base64URL.decode(encoded[...]) == bytes)
        }
    }

    @Test func decodesTheURLAlphabet() {
        #expect(Base64URL.decode("-_8"[...]) == [0xFB, 0xFF])
        #expect(Base64URL.decode("eyJhbGciOiJFUzI1NiJ9"[...]).map { String(decoding: $0, as: UTF8.self) } == #"{"alg":"ES256"}"#)
    }

    @Test(arguments: ["a", "ab=c", "a+bc", "a/bc", "ab c", "abcd=", "é"])
    func refusesWhatIsNotUnpaddedBase64URL(text: String) {
        #expect(Base64URL.decode(text[...]) == nil)
    }
}
