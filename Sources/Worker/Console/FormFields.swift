// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The fields of an `application/x-www-form-urlencoded` body (or a query string): the first value
/// of each name wins, `+` is a space, percent escapes are decoded; a malformed escape keeps the
/// text as it is.
struct FormFields: Sendable, Equatable {
    private(set) var values: [String: String] = [:]

    init() {}

    init(_ encoded: String) {
        for pair in encoded.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.decode(parts[0])
            guard !name.isEmpty, values[name] == nil else { continue }
            values[name] = parts.count > 1 ? Self.decode(parts[1]) : ""
        }
    }

    subscript(_ name: String) -> String? {
        guard let value = values[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else { return nil }
        return value
    }

    /// The fields as a query string, for links that keep a filter.
    static func encode(_ fields: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.map { name, value in
            "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&")
    }

    private static func decode(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
