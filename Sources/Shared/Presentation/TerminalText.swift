// SPDX-License-Identifier: Apache-2.0

/// Text from the database or a provider as an operator's terminal is given it: every control
/// character (C0, DEL, C1) is written out as `\u{1B}`, so no stored value — a user id, a
/// product, an error — can move the cursor, set the window title, make a hyperlink (ESC and OSC
/// sequences) or hide what came before. Line breaks and tabs of the output itself are kept.
public enum TerminalText {
    public static func escaped(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if scalar == "\n" || scalar == "\t" || !UserIDRule.isControl(scalar) {
                result.unicodeScalars.append(scalar)
            } else {
                result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
        }
        return result
    }
}
