// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

/// Version 4 UUIDs from the system's generator, and their dashless hex digits.
struct RandomIdentifierTests {
    /// A generator that returns the given words in turn, to pin the bytes.
    struct Words: RandomNumberGenerator {
        var words: [UInt64]
        mutating func next() -> UInt64 { words.removeFirst() }
    }

    @Test(arguments: [
        // Every bit set and none set: only the version and variant bits are forced.
        (UInt64.max, UInt64.max, "FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF"),
        (0, 0, "00000000-0000-4000-8000-000000000000"),
        (0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, "01234567-89AB-4DEF-BEDC-BA9876543210"),
    ])
    func theWordsAreTheBytesWithVersionFourAndTheRFCVariant(high: UInt64, low: UInt64, expected: String) {
        var generator = Words(words: [high, low])
        #expect(RandomIdentifier.uuid(using: &generator).uuidString == expected)
    }

    @Test func systemIdentifiersAreVersionFourAndDistinct() {
        let ids = (0..<2_000).map { _ in RandomIdentifier.uuid() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            let text = id.uuidString
            #expect(text[text.index(text.startIndex, offsetBy: 14)] == "4")
            #expect("89AB".contains(text[text.index(text.startIndex, offsetBy: 19)]))
        }
    }

    @Test(arguments: ["01234567-89AB-4DEF-BEDC-BA9876543210", "00000000-0000-0000-0000-000000000000", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"])
    func hexDigitsAreTheUUIDStringWithoutDashesInLowerCase(uuid: String) throws {
        let id = try #require(UUID(uuidString: uuid))
        #expect(RandomIdentifier.hexDigits(of: id) == uuid.replacingOccurrences(of: "-", with: "").lowercased())
    }

    @Test func freshHexDigitsAreThirtyTwoLowerCaseDigits() {
        let digits = RandomIdentifier.hexDigits()
        #expect(digits.count == 32)
        #expect(digits.allSatisfy { "0123456789abcdef".contains($0) })
    }
}
