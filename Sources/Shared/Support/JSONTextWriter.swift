// SPDX-License-Identifier: Apache-2.0

/// Writes JSON text member by member, for the arguments the worker sends PostgreSQL as `jsonb`
/// once per batch (`sluice_write_batch`).
///
/// `JSONEncoder` builds a tree of boxed values and walks it again; for these flat rows of
/// strings, integers and booleans that was 7–17 % of the worker's CPU (`scripts/bench-profile`,
/// Benchmarks/README.md). This writes the bytes at once. Strings are escaped as RFC 8259
/// requires (`"`, `\` and the control characters); everything else is written as it is, so the
/// text is valid UTF-8 whenever the strings are (Swift strings always are).
///
/// ```swift
/// var json = JSONTextWriter()
/// json.object { row in
///     row.member("id", 42)
///     row.member("names", ["a", "b"])
/// }
/// json.text  // {"id":42,"names":["a","b"]}
/// ```
public struct JSONTextWriter: Sendable {
    private(set) var bytes: [UInt8] = []
    /// Whether the container being written already holds a value (a comma goes before the next).
    private var hasValue = false

    public init() {}

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// An object; `body` writes its members.
    public mutating func object(_ body: (inout JSONTextWriter) throws -> Void) rethrows {
        try container(open: UInt8(ascii: "{"), close: UInt8(ascii: "}"), body)
    }

    /// An array; `body` writes its elements (``element(_:)`` or nested objects).
    public mutating func array(_ body: (inout JSONTextWriter) throws -> Void) rethrows {
        try container(open: UInt8(ascii: "["), close: UInt8(ascii: "]"), body)
    }

    /// An object member: the key, then whatever `body` writes as its value.
    public mutating func member(_ key: String, _ body: (inout JSONTextWriter) throws -> Void) rethrows {
        separate()
        string(key)
        bytes.append(UInt8(ascii: ":"))
        hasValue = false
        try body(&self)
        hasValue = true
    }

    public mutating func member(_ key: String, _ value: String?) {
        member(key) { $0.element(value) }
    }

    public mutating func member(_ key: String, _ value: Int64?) {
        member(key) { $0.element(value) }
    }

    public mutating func member(_ key: String, _ value: Int) {
        member(key, Int64(value))
    }

    public mutating func member(_ key: String, _ value: Bool?) {
        member(key) { $0.element(value) }
    }

    public mutating func member(_ key: String, _ values: [String]) {
        member(key) { json in json.array { array in for value in values { array.element(value) } } }
    }

    /// A member whose value is JSON text another ``JSONTextWriter`` wrote (``text``), embedded
    /// as it is, or `null`: PostgreSQL reads it as part of this value (`->`), not as a string to
    /// parse again (`(->>)::jsonb`).
    public mutating func member(_ key: String, jsonText: String?) {
        precondition(jsonText?.isEmpty != true, "JSON text to embed is never empty")
        member(key) { json in
            json.separate()
            if let jsonText { json.bytes.append(contentsOf: jsonText.utf8) } else { json.null() }
        }
    }

    /// A string or `null`, as the next value of the container.
    public mutating func element(_ value: String?) {
        separate()
        if let value { string(value) } else { null() }
    }

    public mutating func element(_ value: Int64?) {
        separate()
        if let value { bytes.append(contentsOf: String(value).utf8) } else { null() }
    }

    public mutating func element(_ value: Bool?) {
        separate()
        if let value { bytes.append(contentsOf: (value ? "true" : "false").utf8) } else { null() }
    }

    private mutating func container(open: UInt8, close: UInt8, _ body: (inout JSONTextWriter) throws -> Void) rethrows {
        separate()
        bytes.append(open)
        hasValue = false
        try body(&self)
        bytes.append(close)
        hasValue = true
    }

    private mutating func separate() {
        if hasValue { bytes.append(UInt8(ascii: ",")) }
        hasValue = true
    }

    private mutating func null() {
        bytes.append(contentsOf: "null".utf8)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// A JSON string: `"` and `\` escaped, control characters as `\n`, `\t`… or `\u00XX`, as
    /// `JSONEncoder` escapes them.
    private mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            // Runs that need no escape (most of any text) are copied whole.
            var runStart = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                escape(byte)
                runStart = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Byte by byte, not `append(contentsOf: [a, b])`: an array literal per escape was a heap
    /// allocation per `"` of an event body sent as a string (the balance announcer's calls).
    private mutating func escape(_ byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
        case UInt8(ascii: "\n"): bytes.append(UInt8(ascii: "n"))
        case UInt8(ascii: "\r"): bytes.append(UInt8(ascii: "r"))
        case UInt8(ascii: "\t"): bytes.append(UInt8(ascii: "t"))
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        default:
            bytes.append(UInt8(ascii: "u"))
            bytes.append(UInt8(ascii: "0"))
            bytes.append(UInt8(ascii: "0"))
            bytes.append(Self.hexDigits[Int(byte >> 4)])
            bytes.append(Self.hexDigits[Int(byte & 0x0F)])
        }
    }
}
