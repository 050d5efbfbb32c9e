// SPDX-License-Identifier: Apache-2.0

/// The fast path of ``StripeEventEnvelope/decode(_:)``: one pass over the body that checks that all
/// of it is JSON (RFC 8259) and takes the envelope's six fields, without building Swift values for
/// the rest. A Stripe event is about 2 KB, and `JSONDecoder` turns every key of its `data.object`
/// into a `String` to find one `id`; this does not.
///
/// It answers only when it is sure. Anything unusual — an escape in a key or in a field it takes,
/// a `created` that is not a plain integer, a key given twice, a field of another type, nesting
/// deeper than ``maximumDepth``, a `\u` escape of a surrogate, bytes that are not UTF-8, or a body
/// that is not JSON at all — gives `nil`, and `JSONDecoder` decides as before. So a body it reads
/// is one `JSONDecoder` reads the same way (`StripeEnvelopeSkimTests` checks this on real events
/// and on thousands of broken ones).
struct StripeEnvelopeSkim {
    /// Past this depth of objects and arrays it leaves the body to `JSONDecoder`.
    static let maximumDepth = 64

    /// The envelope of `bytes`, or `nil` when unsure.
    static func envelope(in bytes: UnsafeRawBufferPointer) -> StripeEventEnvelope? {
        var skim = StripeEnvelopeSkim(bytes: bytes)
        guard let envelope = skim.topLevel() else { return nil }
        skim.skipWhitespace()
        return skim.index == bytes.count ? envelope : nil
    }

    private let bytes: UnsafeRawBufferPointer
    private var index = 0

    private init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    // MARK: The envelope's fields

    private mutating func topLevel() -> StripeEventEnvelope? {
        var id: String?, object: String?, type: String?, created: Int64?
        var livemode: Bool??, data: StripeEventEnvelope.DataObject??
        let complete = members { skim, key in
            guard !key.escaped else { return false }
            if skim.key(key, is: "id") { return skim.take(&id) { $0.plainString() } }
            if skim.key(key, is: "object") { return skim.take(&object) { $0.plainString() } }
            if skim.key(key, is: "type") { return skim.take(&type) { $0.plainString() } }
            if skim.key(key, is: "created") { return skim.take(&created) { $0.integer() } }
            if skim.key(key, is: "livemode") { return skim.take(&livemode) { $0.nullable { $0.boolean() } } }
            if skim.key(key, is: "data") { return skim.take(&data) { $0.nullable { $0.dataObject() } } }
            return skim.skipValue(depth: 1)
        }
        guard complete, let id, let object, let type, let created else { return nil }
        return StripeEventEnvelope(id: id, object: object, type: type, created: created, livemode: livemode ?? nil, data: data ?? nil)
    }

    /// `data`: `{"object": {"id": …}}`, either level `null` or without the key.
    private mutating func dataObject() -> StripeEventEnvelope.DataObject? {
        var object: StripeEventEnvelope.DataObject.Object??
        let complete = members { skim, key in
            guard !key.escaped else { return false }
            guard skim.key(key, is: "object") else { return skim.skipValue(depth: 2) }
            return skim.take(&object) {
                $0.nullable { skim -> StripeEventEnvelope.DataObject.Object? in
                    var id: String??
                    let complete = skim.members { skim, key in
                        guard !key.escaped else { return false }
                        guard skim.key(key, is: "id") else { return skim.skipValue(depth: 3) }
                        return skim.take(&id) { $0.nullable { $0.plainString() } }
                    }
                    return complete ? StripeEventEnvelope.DataObject.Object(id: id ?? nil) : nil
                }
            }
        }
        return complete ? StripeEventEnvelope.DataObject(object: object ?? nil) : nil
    }

    /// Reads a field's value into `slot`; `false` (unsure) when the key came before or the value
    /// is not what `read` takes.
    private mutating func take<Value>(_ slot: inout Value?, _ read: (inout Self) -> Value?) -> Bool {
        guard slot == nil, let value = read(&self) else { return false }
        slot = value
        return true
    }

    /// `null` as `.some(nil)`; otherwise `read`'s value, or `nil` (unsure).
    private mutating func nullable<Value>(_ read: (inout Self) -> Value?) -> Value?? {
        if literal("null") { return .some(nil) }
        return read(&self).map { .some($0) }
    }

    // MARK: JSON values

    /// A key: where its contents are, and whether they hold escapes (then its bytes are not its value).
    private typealias Key = (range: Range<Int>, escaped: Bool)

    /// Whether the key's bytes are `name` (a key with escapes is compared by its caller: never equal).
    private func key(_ key: Key, is name: StaticString) -> Bool {
        !key.escaped && key.range.count == name.utf8CodeUnitCount
            && UnsafeRawBufferPointer(rebasing: bytes[key.range]).elementsEqual(
                UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    }

    /// An object, each member handed to `member` with its key and the cursor on its value;
    /// `false` when unsure.
    private mutating func members(_ member: (inout Self, Key) -> Bool) -> Bool {
        skipWhitespace()
        guard consume(UInt8(ascii: "{")) else { return false }
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return true }
        while true {
            skipWhitespace()
            guard let key = string() else { return false }
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { return false }
            skipWhitespace()
            guard member(&self, key) else { return false }
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            return consume(UInt8(ascii: "}"))
        }
    }

    /// Any value, checked and passed over; `false` when unsure.
    private mutating func skipValue(depth: Int) -> Bool {
        guard depth < Self.maximumDepth, let byte = peek else { return false }
        switch byte {
        case UInt8(ascii: "{"):
            return members { skim, _ in skim.skipValue(depth: depth + 1) }
        case UInt8(ascii: "["):
            index += 1
            skipWhitespace()
            if consume(UInt8(ascii: "]")) { return true }
            while true {
                skipWhitespace()
                guard skipValue(depth: depth + 1) else { return false }
                skipWhitespace()
                if consume(UInt8(ascii: ",")) { continue }
                return consume(UInt8(ascii: "]"))
            }
        case UInt8(ascii: "\""): return string() != nil
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        default: return number() != nil
        }
    }

    private mutating func boolean() -> Bool? {
        if literal("true") { return true }
        if literal("false") { return false }
        return nil
    }

    /// A string without escapes (so its bytes are its value).
    private mutating func plainString() -> String? {
        guard let string = string(), !string.escaped else { return nil }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[string.range]), as: UTF8.self)
    }

    /// A string: the range of its contents and whether it has escapes; `nil` for a control
    /// character, a malformed escape, a `\u` surrogate or bytes that are not UTF-8.
    private mutating func string() -> Key? {
        guard consume(UInt8(ascii: "\"")) else { return nil }
        let start = index
        var escaped = false
        while let byte = peek {
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return (start..<index - 1, escaped)
            case UInt8(ascii: "\\"):
                escaped = true
                guard escape() else { return nil }
            case 0..<0x20:
                return nil
            case 0x20..<0x80:
                index += 1
            default:
                guard utf8Sequence() else { return nil }
            }
        }
        return nil
    }

    /// `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t` or `\uXXXX` outside the surrogates.
    private mutating func escape() -> Bool {
        index += 1
        guard let byte = peek else { return false }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return true
        case UInt8(ascii: "u"):
            var scalar: UInt32 = 0
            for _ in 0..<4 {
                guard let digit = peek.flatMap(HexDigit.value) else { return false }
                scalar = scalar << 4 | UInt32(digit)
                index += 1
            }
            return !(0xD800...0xDFFF).contains(scalar)
        default:
            return false
        }
    }

    /// One multi-byte UTF-8 sequence (RFC 3629: no overlong forms, surrogates or values past U+10FFFF).
    private mutating func utf8Sequence() -> Bool {
        guard let lead = peek else { return false }
        let (count, secondRange): (Int, ClosedRange<UInt8>)
        switch lead {
        case 0xC2...0xDF: (count, secondRange) = (1, 0x80...0xBF)
        case 0xE0: (count, secondRange) = (2, 0xA0...0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (count, secondRange) = (2, 0x80...0xBF)
        case 0xED: (count, secondRange) = (2, 0x80...0x9F)
        case 0xF0: (count, secondRange) = (3, 0x90...0xBF)
        case 0xF1...0xF3: (count, secondRange) = (3, 0x80...0xBF)
        case 0xF4: (count, secondRange) = (3, 0x80...0x8F)
        default: return false
        }
        guard index + count < bytes.count, secondRange.contains(bytes[index + 1]) else { return false }
        for offset in stride(from: 2, through: count, by: 1) where !(0x80...0xBF).contains(bytes[index + offset]) {
            return false
        }
        index += count + 1
        return true
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; whether it is an integer.
    private mutating func number() -> (Range<Int>, isInteger: Bool)? {
        let start = index
        _ = consume(UInt8(ascii: "-"))
        if consume(UInt8(ascii: "0")) {
            if let next = peek, Self.isDigit(next) { return nil }
        } else {
            guard skipDigits() else { return nil }
        }
        var isInteger = true
        if consume(UInt8(ascii: ".")) {
            isInteger = false
            guard skipDigits() else { return nil }
        }
        if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
            isInteger = false
            if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
            guard skipDigits() else { return nil }
        }
        return (start..<index, isInteger)
    }

    /// An integer in `Int64`'s range, written without fraction or exponent.
    private mutating func integer() -> Int64? {
        guard let (range, isInteger) = number(), isInteger else { return nil }
        var digits = bytes[range][...]
        let negative = digits.first == UInt8(ascii: "-")
        if negative { digits = digits.dropFirst() }
        var value: Int64 = 0
        for digit in digits {
            let (shifted, overflowMultiply) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowAdd) = negative
                ? shifted.subtractingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
                : shifted.addingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
            guard !overflowMultiply, !overflowAdd else { return nil }
            value = next
        }
        return value
    }

    private mutating func skipDigits() -> Bool {
        let start = index
        while let byte = peek, Self.isDigit(byte) { index += 1 }
        return index > start
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            return false
        }
        index += count
        return true
    }

    // MARK: The cursor

    private var peek: UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard peek == byte else { return false }
        index += 1
        return true
    }

    /// RFC 8259's whitespace: space, tab, line feed, carriage return.
    mutating func skipWhitespace() {
        while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }
}
