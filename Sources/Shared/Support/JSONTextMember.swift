// SPDX-License-Identifier: Apache-2.0

/// One member of a JSON object whose members are listed once and written either way: by
/// `Encodable` (the read API, through Hummingbird's encoder) or by ``JSONTextWriter`` (the
/// outgoing events' bodies, written once per change on the apply path).
public struct JSONTextMember: Sendable, Equatable {
    public var key: String
    public var value: Value

    public init(_ key: String, _ value: Value) {
        self.key = key
        self.value = value
    }

    public init(_ key: String, _ value: String?) {
        self.init(key, value.map(Value.string) ?? .null)
    }

    public init(_ key: String, _ value: Int64?) {
        self.init(key, value.map(Value.integer) ?? .null)
    }

    public init(_ key: String, _ value: Bool) {
        self.init(key, .bool(value))
    }

    /// The values these objects hold: no floating point, nothing deeper than an object of them.
    public indirect enum Value: Sendable, Equatable {
        case null
        case string(String)
        case bool(Bool)
        case integer(Int64)
        case strings([String])
        case object([JSONTextMember])
    }

    /// `members` sorted by key, byte by byte: for keys of lower-case ASCII letters, digits and
    /// `_`, the order `JSONEncoder`'s `.sortedKeys` writes.
    public static func sorted(_ members: [JSONTextMember]) -> [JSONTextMember] {
        members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }

    /// Encodes `members` in order into `encoder`'s keyed container.
    public static func encode(_ members: [JSONTextMember], to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try encode(members, into: &container)
    }

    private static func encode(_ members: [JSONTextMember], into container: inout KeyedEncodingContainer<Key>) throws {
        for member in members {
            let key = Key(member.key)
            switch member.value {
            case .null: try container.encodeNil(forKey: key)
            case .string(let string): try container.encode(string, forKey: key)
            case .bool(let bool): try container.encode(bool, forKey: key)
            case .integer(let integer): try container.encode(integer, forKey: key)
            case .strings(let strings): try container.encode(strings, forKey: key)
            case .object(let nested):
                var inner = container.nestedContainer(keyedBy: Key.self, forKey: key)
                try encode(nested, into: &inner)
            }
        }
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

extension JSONTextWriter {
    /// An object of `members`, in the order given.
    public mutating func object(_ members: [JSONTextMember]) {
        object { object in
            for member in members { object.member(member.key, member.value) }
        }
    }

    public mutating func member(_ key: String, _ value: JSONTextMember.Value) {
        switch value {
        case .null: member(key, nil as String?)
        case .string(let string): member(key, string)
        case .bool(let bool): member(key, bool)
        case .integer(let integer): member(key, integer)
        case .strings(let strings): member(key, strings)
        case .object(let members): member(key) { $0.object(members) }
        }
    }
}
