// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A plain-text table for a terminal: a header row and columns padded to their widest cell.
struct TextTable {
    let headers: [String]
    var rows: [[String]] = []

    init(_ headers: String...) {
        self.headers = headers
    }

    mutating func add(_ cells: String...) {
        rows.append(cells)
    }

    var rendered: String {
        let widths = headers.indices.map { column in
            ([headers] + rows).map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0
        }
        return ([headers] + rows).map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
