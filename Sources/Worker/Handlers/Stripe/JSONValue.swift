// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Any JSON value, for reading Stripe objects whose shape varies by type and API version
/// (parsed by ``parse(_:)``).
enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The value at a dotted path such as `items.data.0.price.product`; `.null` when absent.
    /// Empty components are skipped (`a..b` is `a.b`).
    ///
    /// Walks the path in place: splitting it into an array first was ~3 % of the worker's CPU in
    /// a mixed drain, Stripe's handlers reading a few dozen paths an event (Benchmarks/HISTORY.md).
    subscript(path: String) -> JSONValue {
        var value = self
        var rest = path[...]
        while !rest.isEmpty {
            let end = rest.utf8.firstIndex(of: UInt8(ascii: ".")) ?? rest.endIndex
            let component = rest[..<end]
            rest = end == rest.endIndex ? rest[end...] : rest[rest.utf8.index(after: end)...]
            if component.isEmpty { continue }
            switch value {
            case .object(let object): value = object[String(component)] ?? .null
            case .array(let array):
                guard let index = Int(component), array.indices.contains(index) else { return .null }
                value = array[index]
            default: return .null
            }
        }
        return value
    }

    var string: String? {
        if case .string(let value) = self, !value.isEmpty { return value }
        return nil
    }

    /// A string, the empty one included (``string`` reads an empty one as absent).
    var anyString: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var number: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    var int: Int64? {
        if case .number(let value) = self, value.isFinite, abs(value) < 9e15 { return Int64(value) }
        return nil
    }

    var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// A Unix time in seconds, as Stripe writes times.
    var date: Date? { int.map { Date(timeIntervalSince1970: TimeInterval($0)) } }

    /// The id of an object that may be expanded or only referenced by id.
    var id: String? { string ?? self["id"].string }
}
