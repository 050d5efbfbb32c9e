// SPDX-License-Identifier: Apache-2.0

/// Splits a SQL script into its statements at the `;` that end them.
///
/// postgres-nio speaks only the extended query protocol, which takes one statement at a time, so
/// a migration file is run statement by statement. A `;` inside a quoted string (`'…'`), a quoted
/// identifier (`"…"`), a dollar-quoted body (`$$…$$`, `$fn$…$fn$`) or a comment (`-- …`, `/* … */`)
/// does not end a statement.
public enum SQLStatementSplitter {
    /// - Returns: the statements, trimmed, without their `;`; blank and comment-only ones are dropped.
    public static func split(_ script: String) -> [String] {
        let characters = Array(script.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var hasCode = false
        var index = 0

        func flush() {
            let text = String(current).trimmingWhitespace()
            if hasCode && !text.isEmpty { statements.append(text) }
            current = String.UnicodeScalarView()
            hasCode = false
        }
        func copy(until end: Int) {
            current.append(contentsOf: characters[index..<end])
            index = end
        }

        while index < characters.count {
            let c = characters[index]
            let next = index + 1 < characters.count ? characters[index + 1] : nil
            switch c {
            case "-" where next == "-":
                copy(until: characters[index...].firstIndex(of: "\n") ?? characters.count)
            case "/" where next == "*":
                copy(until: endOfBlockComment(characters, from: index))
            case "'", "\"":
                hasCode = true
                copy(until: endOfQuoted(characters, from: index, quote: c))
            case "$":
                hasCode = true
                if let tagEnd = dollarTagEnd(characters, from: index) {
                    let tag = Array(characters[index...tagEnd])
                    copy(until: endOfDollarQuoted(characters, after: tagEnd + 1, tag: tag))
                } else {
                    copy(until: index + 1)
                }
            case ";":
                index += 1
                flush()
            default:
                if !c.properties.isWhitespace { hasCode = true }
                copy(until: index + 1)
            }
        }
        flush()
        return statements
    }

    private static func endOfBlockComment(_ s: [Unicode.Scalar], from start: Int) -> Int {
        var i = start + 2
        while i + 1 < s.count {
            if s[i] == "*" && s[i + 1] == "/" { return i + 2 }
            i += 1
        }
        return s.count
    }

    /// After the closing quote; a doubled quote inside is an escaped quote.
    private static func endOfQuoted(_ s: [Unicode.Scalar], from start: Int, quote: Unicode.Scalar) -> Int {
        var i = start + 1
        while i < s.count {
            if s[i] == quote {
                if i + 1 < s.count && s[i + 1] == quote { i += 2; continue }
                return i + 1
            }
            i += 1
        }
        return s.count
    }

    /// The index of the `$` closing a dollar-quote tag (`$$` or `$name$`) that starts at `start`.
    private static func dollarTagEnd(_ s: [Unicode.Scalar], from start: Int) -> Int? {
        var i = start + 1
        while i < s.count {
            if s[i] == "$" { return i }
            guard s[i] == "_" || s[i].properties.isAlphabetic || (i > start + 1 && s[i].properties.numericType != nil) else { return nil }
            i += 1
        }
        return nil
    }

    private static func endOfDollarQuoted(_ s: [Unicode.Scalar], after bodyStart: Int, tag: [Unicode.Scalar]) -> Int {
        var i = bodyStart
        while i + tag.count <= s.count {
            if s[i] == "$" && Array(s[i..<(i + tag.count)]) == tag { return i + tag.count }
            i += 1
        }
        return s.count
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }
}
