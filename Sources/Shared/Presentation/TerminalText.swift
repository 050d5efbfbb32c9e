// SPDX-License-Identifier: Apache-2.0

/// Text from the database or a provider as an operator's terminal is given it: every control
/// character (C0, DEL, C1) and every bidirectional override (U+202A–U+202E, U+2066–U+2069) is
/// written out as `\u{1B}`, so no stored value — a user id, a product, an error — can move the
/// cursor, set the window title, make a hyperlink (ESC and OSC sequences), hide what came before
/// or show itself reversed. Line breaks and tabs of the output itself are kept.
public enum TerminalText {
    public static func escaped(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if scalar == "\n" || scalar == "\t" || !needsEscaping(scalar) {
                result.unicodeScalars.append(scalar)
            } else {
                result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
        }
        return result
    }

    /// JSON for a terminal: JSON already escapes C0; DEL, C1 and the bidirectional overrides,
    /// which it writes as they are, become `\u00XX` / `\u20XX` escapes, still valid JSON.
    public static func escapedJSON(_ json: String) -> String {
        var result = ""
        result.reserveCapacity(json.utf8.count)
        for scalar in json.unicodeScalars {
            if needsEscaping(scalar) {
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func needsEscaping(_ scalar: Unicode.Scalar) -> Bool {
        UserIDRule.isControl(scalar) || (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }
}
