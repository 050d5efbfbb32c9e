// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Shared

/// Variable lists stay aligned in an 80-column terminal: swift-argument-parser re-wraps any line
/// over 79 columns back to column 0, so ``HelpText`` wraps them first, under their text.
struct HelpTextTests {
    @Test func aLongRowWrapsUnderItsDescription() {
        let row = "  DATABASE_URL              postgres://user:pass@host:port/db[?sslmode=…] (required; sslmode default prefer)"
        #expect(HelpText.wrapped(row) == """
              DATABASE_URL              postgres://user:pass@host:port/db[?sslmode=…]
                                        (required; sslmode default prefer)
            """)
    }

    @Test func aNameThatFillsItsColumnGetsALineOfItsOwn() {
        let row = "  CLOCK_SWEEP_INTERVAL_SECONDS how often access that ran out is announced"
        #expect(HelpText.wrapped(row) == """
              CLOCK_SWEEP_INTERVAL_SECONDS
                                        how often access that ran out is announced
            """)
    }

    @Test func shortLinesAndProseIndentsAreKept() {
        let text = "Environment:\n  PORT                      port (default 8090)\n\nA paragraph."
        #expect(HelpText.wrapped(text) == text)
    }

    @Test func everyWrappedLineFitsAndNoWordIsLost() {
        let row = "  API_KEYS                  " + Array(repeating: "word", count: 60).joined(separator: " ")
        let lines = HelpText.wrapped(row).split(separator: "\n")
        #expect(lines.allSatisfy { $0.count <= HelpText.width })
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix(String(repeating: " ", count: HelpText.descriptionColumn) + "word") })
        #expect(lines.flatMap { $0.split(separator: " ") }.filter { $0 == "word" }.count == 60)
    }
}
