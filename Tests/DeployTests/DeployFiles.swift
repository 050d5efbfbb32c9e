// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import Yams

/// Reads the files under `deploy/` and the README they must agree with.
enum DeployFiles {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func url(_ path: String) -> URL { repository.appendingPathComponent(path) }

    static func text(_ path: String) throws -> String {
        try String(contentsOf: url(path), encoding: .utf8)
    }

    /// One YAML document as nested dictionaries and arrays, with `<<` merge keys applied.
    static func yaml(_ path: String) throws -> [String: Any] {
        try #require(try Yams.load(yaml: text(path)) as? [String: Any], "\(path) is not a YAML mapping")
    }

    /// Every document of a multi-document YAML file.
    static func yamlDocuments(_ path: String) throws -> [[String: Any]] {
        try Yams.load_all(yaml: text(path)).map { try #require($0 as? [String: Any], "a document of \(path) is not a mapping") }
    }

    /// The variables the README's configuration table documents (`NAME` in its first column).
    static func documentedVariables() throws -> Set<String> {
        var names: Set<String> = []
        for line in try text("README.md").split(separator: "\n") where line.hasPrefix("| `") {
            let firstCell = line.split(separator: "|").first ?? ""
            // Every other piece between backticks is a code span: `A`, `B` → A, B.
            let spans = firstCell.split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 1 }.map { String($0.element) }
            names.formUnion(spans.filter { span in span.allSatisfy { $0.isUppercase || $0.isNumber || $0 == "_" } })
        }
        return names
    }
}

/// Walks into nested YAML values by key, or fails the test with the path it could not follow.
func value(_ root: Any?, _ keys: String...) throws -> Any {
    var current = root
    for key in keys {
        current = (current as? [String: Any])?[key]
    }
    return try #require(current, "no \(keys.joined(separator: "."))")
}
