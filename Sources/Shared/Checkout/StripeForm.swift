// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A Stripe request body: `application/x-www-form-urlencoded`, with nested keys in brackets
/// (`metadata[user_id]=…`, `line_items[0][price]=…`, `expand[]=…`), in the order they were added,
/// so one request's body is the same bytes every time it is sent (an `Idempotency-Key` replay
/// compares parameters).
public struct StripeForm: Sendable, Equatable {
    public private(set) var fields: [(key: String, value: String)] = []

    public init() {}

    public mutating func add(_ key: String, _ value: String?) {
        if let value { fields.append((key, value)) }
    }

    public mutating func add(_ key: String, _ value: Int?) {
        add(key, value.map(String.init))
    }

    /// `metadata[key]=value` for each pair, sorted by key.
    public mutating func addMetadata(_ metadata: [String: String], under prefix: String = "metadata") {
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) { add("\(prefix)[\(key)]", value) }
    }

    public mutating func expand(_ paths: String...) {
        for path in paths { add("expand[]", path) }
    }

    public var encoded: String {
        fields.map { Self.escape($0.key) + "=" + Self.escape($0.value) }.joined(separator: "&")
    }

    /// Percent-encodes all but RFC 3986's unreserved characters (brackets too, as Stripe's libraries do).
    public static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    private static let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")

    /// The fields of an encoded body, decoded (for the stand-in and tests).
    public static func decode(_ body: String) -> [(key: String, value: String)] {
        body.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
    }

    public static func == (lhs: StripeForm, rhs: StripeForm) -> Bool { lhs.encoded == rhs.encoded }
}
