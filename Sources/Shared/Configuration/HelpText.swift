// SPDX-License-Identifier: Apache-2.0

/// Help text laid out for swift-argument-parser, which keeps a line of a command's `discussion`
/// as it is only when it fits in 79 columns and otherwise re-wraps it back to column 0 — so a
/// list of variables written one per line came out ragged (issue 38).
///
/// ``wrapped(_:width:)`` wraps each longer line itself, continuing under the column where its
/// text starts: after `  NAME   ` in a `NAME  description` row, else under its own indent.
public enum HelpText {
    /// The widest line swift-argument-parser leaves alone on an 80-column terminal.
    public static let width = 79

    /// The column descriptions start at in a variable list (`  NAME` padded to 28).
    public static let descriptionColumn = 28

    public static func wrapped(_ text: String, width: Int = HelpText.width) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .flatMap { splittingLongName(String($0)) }
            .map { wrap($0, width: width) }
            .joined(separator: "\n")
    }

    /// A row whose name fills the name column (`  CLOCK_SWEEP_INTERVAL_SECONDS how often…`, one
    /// space before its text) as two: the name, then its text at ``descriptionColumn``.
    static func splittingLongName(_ line: String) -> [String] {
        let leading = line.prefix { $0 == " " }.count
        let rest = line.dropFirst(leading)
        guard leading == 2, let space = rest.firstIndex(of: " ") else { return [line] }
        let name = rest[..<space]
        let text = rest[rest.index(after: space)...]
        guard name.count >= descriptionColumn - leading - 2, name.allSatisfy({ $0.isUppercase || $0.isNumber || $0 == "_" }),
              let first = text.first, first != " "
        else { return [line] }
        return [String(line.prefix(leading) + name), String(repeating: " ", count: descriptionColumn) + text]
    }

    /// One line, wrapped at `width` with a hanging indent.
    static func wrap(_ line: String, width: Int) -> String {
        guard line.count > width else { return line }
        let indent = String(repeating: " ", count: hangingIndent(of: line, width: width))
        let tokens = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        var lines: [String] = []
        var current = tokens[0]
        for token in tokens.dropFirst() {
            // An empty token is a second space in a row (alignment): it stays on the line.
            if token.isEmpty {
                current += " "
            } else if current.count + 1 + token.count <= width || current.allSatisfy({ $0 == " " }) {
                current += " " + token
            } else {
                lines.append(String(current.reversed().drop { $0 == " " }.reversed()))
                current = indent + token
            }
        }
        lines.append(current)
        return lines.joined(separator: "\n")
    }

    /// Where a wrapped line's continuation starts: the column of the description in a
    /// `  NAME   description` row (two or more spaces after a name), else the line's own indent;
    /// never so far right that less than 30 columns remain.
    static func hangingIndent(of line: String, width: Int) -> Int {
        let characters = Array(line)
        let leading = characters.prefix { $0 == " " }.count
        var index = leading
        while index < characters.count {
            if characters[index] == " ", index + 1 < characters.count, characters[index + 1] == " " {
                var column = index
                while column < characters.count, characters[column] == " " { column += 1 }
                return column <= width - 30 ? column : leading
            }
            index += 1
        }
        return leading
    }
}
