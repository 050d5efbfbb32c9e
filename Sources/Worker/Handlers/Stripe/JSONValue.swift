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
    subscript(path: String) -> JSONValue {
        var value = self
        for component in path.split(separator: ".") {
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
