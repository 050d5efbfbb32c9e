// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// Where JSON text stopped being JSON (RFC 8259).
struct JSONSyntaxError: Error, CustomStringConvertible {
    /// The byte offset of the problem.
    var offset: Int
    var reason: String
    var description: String { "not JSON at byte \(offset): \(reason)" }
}

extension JSONValue {
    /// The deepest nesting accepted: a stored body nested deeper is refused, not recursed into.
    static let maximumDepth = 512

    /// Parses JSON text (RFC 8259): one value, with whitespace around it.
    ///
    /// A single pass over the bytes. `JSONDecoder` reached a `JSONValue` only by trying each case
    /// in turn and throwing for every miss, which made decoding a stored Stripe event 12 % of the
    /// worker's CPU on events it only records (`scripts/bench-profile`, Benchmarks/README.md).
    /// Strings must be valid UTF-8 with valid escapes (a lone surrogate is refused); numbers are
    /// read as `Double`; of a key given twice, the last value counts.
    static func parse(_ data: Data) throws(JSONSyntaxError) -> JSONValue {
        let result: Result<JSONValue, JSONSyntaxError> = data.withUnsafeBytes { raw in
            var parser = JSONParser(bytes: raw.bindMemory(to: UInt8.self))
            return Result { () throws(JSONSyntaxError) in try parser.document() }
        }
        return try result.get()
    }
}

/// The parser behind ``JSONValue/parse(_:)``: a cursor over the bytes.
private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func document() throws(JSONSyntaxError) -> JSONValue {
        let value = try self.value()
        skipWhitespace()
        guard index == bytes.count else { throw failure("text after the value") }
        return value
    }

    private func failure(_ reason: String) -> JSONSyntaxError {
        JSONSyntaxError(offset: index, reason: reason)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws(JSONSyntaxError) {
        guard current == byte else { throw failure("expected \"\(Character(Unicode.Scalar(byte)))\"") }
        index += 1
    }

    private mutating func value() throws(JSONSyntaxError) -> JSONValue {
        skipWhitespace()
        guard let byte = current else { throw failure("a value is missing") }
        switch byte {
        case UInt8(ascii: "{"): return try nested { parser throws(JSONSyntaxError) in try parser.object() }
        case UInt8(ascii: "["): return try nested { parser throws(JSONSyntaxError) in try parser.array() }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw failure("unexpected character")
        }
    }

    private mutating func nested(_ body: (inout JSONParser) throws(JSONSyntaxError) -> JSONValue) throws(JSONSyntaxError) -> JSONValue {
        guard depth < JSONValue.maximumDepth else { throw failure("nested deeper than \(JSONValue.maximumDepth)") }
        depth += 1
        defer { depth -= 1 }
        return try body(&self)
    }

    private mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard index + expected.count <= bytes.count, bytes[index..<index + expected.count].elementsEqual(expected) else {
            throw failure("unexpected character")
        }
        index += expected.count
    }

    private mutating func object() throws(JSONSyntaxError) -> JSONValue {
        index += 1  // {
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            let key = try string()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            members[key] = try value()
            skipWhitespace()
            if current == UInt8(ascii: ",") { index += 1; continue }
            try expect(UInt8(ascii: "}"))
            return .object(members)
        }
    }

    private mutating func array() throws(JSONSyntaxError) -> JSONValue {
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try value())
            skipWhitespace()
            if current == UInt8(ascii: ",") { index += 1; continue }
            try expect(UInt8(ascii: "]"))
            return .array(elements)
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, read as a `Double`.
    private mutating func number() throws(JSONSyntaxError) -> Double {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else {
            guard digits() > 0 else { throw failure("a number needs digits") }
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw failure("a fraction needs digits") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw failure("an exponent needs digits") }
        }
        guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)) else {
            throw JSONSyntaxError(offset: start, reason: "not a number")
        }
        return value
    }

    private mutating func digits() -> Int {
        let start = index
        while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { index += 1 }
        return index - start
    }

    /// A string from its opening quote: copied as it is up to the first escape, decoded after.
    private mutating func string() throws(JSONSyntaxError) -> String {
        index += 1  // "
        let start = index
        var decoded: [UInt8]? = nil
        while true {
            guard let byte = current else { throw failure("a string is not closed") }
            switch byte {
            case UInt8(ascii: "\""):
                let text = decoded.map { String(validating: $0, as: UTF8.self) }
                    ?? String(validating: bytes[start..<index], as: UTF8.self)
                guard let text else { throw JSONSyntaxError(offset: start, reason: "a string is not valid UTF-8") }
                index += 1
                return text
            case UInt8(ascii: "\\"):
                if decoded == nil { decoded = Array(bytes[start..<index]) }
                index += 1
                try escape(into: &decoded!)
            case 0..<0x20:
                throw failure("a control character in a string must be escaped")
            default:
                decoded?.append(byte)
                index += 1
            }
        }
    }

    /// The escape after a backslash, appended as UTF-8.
    private mutating func escape(into output: inout [UInt8]) throws(JSONSyntaxError) {
        guard let byte = current else { throw failure("a string is not closed") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(byte)
        case UInt8(ascii: "b"): output.append(0x08)
        case UInt8(ascii: "f"): output.append(0x0C)
        case UInt8(ascii: "n"): output.append(0x0A)
        case UInt8(ascii: "r"): output.append(0x0D)
        case UInt8(ascii: "t"): output.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try hexQuad())
            if (0xD800...0xDBFF).contains(scalar) {
                // A high surrogate must be followed by an escaped low one.
                guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                    throw failure("a lone surrogate")
                }
                index += 2
                let low = UInt32(try hexQuad())
                guard (0xDC00...0xDFFF).contains(low) else { throw failure("a lone surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("a lone surrogate") }
            output.append(contentsOf: UTF8.encode(unicode)!)
        default:
            throw failure("an unknown escape")
        }
    }

    private mutating func hexQuad() throws(JSONSyntaxError) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = HexDigit.value(byte) else { throw failure("\\u needs four hex digits") }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }
}
