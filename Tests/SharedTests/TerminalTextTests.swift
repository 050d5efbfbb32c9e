// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

/// What reaches an operator's terminal from stored text (issue 37, finding 5), and the user id
/// rule at the door, as tables.
struct TerminalTextTests {
    @Test(arguments: [
        ("plain id", "plain id"),
        ("evil\u{1B}]8;;https://x\u{7}link", #"evil\u{1B}]8;;https://x\u{7}link"#),
        ("nul\u{0}", #"nul\u{0}"#),
        ("del\u{7F} csi\u{9B}2J", #"del\u{7F} csi\u{9B}2J"#),
        ("rtl\u{202E}txt.exe", #"rtl\u{202E}txt.exe"#),
        ("two\nlines\tand a tab", "two\nlines\tand a tab"),
        ("ünïcödé ✓", "ünïcödé ✓"),
    ])
    func controlCharactersAreWrittenOut(text: String, shown: String) {
        #expect(TerminalText.escaped(text) == shown)
    }

    @Test(arguments: ["del\u{7F}", "c1\u{85}\u{9B}", "rtl\u{202E}x", "nul\u{0}esc\u{1B}", "fine"])
    func jsonStaysJSONAndCarriesNoRawControlCharacter(value: String) throws {
        let json = TerminalText.escapedJSON(String(decoding: try JSONEncoder().encode(["id": value]), as: UTF8.self))
        #expect(!json.unicodeScalars.contains { UserIDRule.isControl($0) || (0x202A...0x202E).contains($0.value) })
        let decoded = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: String]
        #expect(decoded?["id"] == value, "the same value, parsed back")
    }

    @Test(arguments: [
        ("user_1", nil), ("user@example.com", nil), ("ünïcödé", nil), (String(repeating: "u", count: 255), nil),
        ("", "user_id must be 1 to 255 bytes"), (String(repeating: "u", count: 256), "user_id must be 1 to 255 bytes"),
        (String(repeating: "é", count: 128), "user_id must be 1 to 255 bytes"),
        ("abc\u{0}", "user_id must not contain control characters"), ("a\u{1B}[31m", "user_id must not contain control characters"),
        ("tab\t", "user_id must not contain control characters"), ("del\u{7F}", "user_id must not contain control characters"),
        ("c1\u{85}", "user_id must not contain control characters"),
    ] as [(String, String?)])
    func theUserIDRule(id: String, problem: String?) {
        #expect(UserIDRule.problem(with: id) == problem)
    }
}
