// SPDX-License-Identifier: Apache-2.0

/// A parsed `Stripe-Signature` header: `t=1700000000,v1=<hex>[,v1=<hex>…]`.
///
/// Schemes other than `v1` (such as the test-mode `v0`) are ignored, as Stripe's libraries do.
public struct StripeSignatureHeader: Sendable, Equatable {
    /// The signing time, in seconds since 1970.
    public var timestamp: Int64
    /// Every `v1=` value, hex-decoded; values that are not hex are kept as empty (they match nothing).
    public var signatures: [[UInt8]]

    /// - Throws: ``Rejection`` `malformed_signature` when there is no integer `t=` or no `v1=`.
    public init(parsing header: Substring) throws(Rejection) {
        var timestamp: Int64?
        var signatures: [[UInt8]] = []
        for item in header.split(separator: ",", omittingEmptySubsequences: true) {
            guard let equals = item.firstIndex(of: "=") else { continue }
            let key = item[..<equals].trimmingSpaces()
            let value = item[item.index(after: equals)...].trimmingSpaces()
            switch key {
            case "t": timestamp = Int64(value)
            case "v1": signatures.append(Self.hexBytes(value) ?? [])
            default: continue
            }
        }
        guard let timestamp else {
            throw Rejection(.malformedSignature, "Stripe-Signature has no valid t= timestamp")
        }
        guard !signatures.isEmpty else {
            throw Rejection(.malformedSignature, "Stripe-Signature has no v1 signature")
        }
        self.timestamp = timestamp
        self.signatures = signatures
    }

    /// Lower- or upper-case hex to bytes; `nil` for anything else.
    static func hexBytes(_ text: Substring) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard !utf8.isEmpty, utf8.count.isMultiple(of: 2), utf8.count <= 256 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Substring {
    func trimmingSpaces() -> Substring {
        var slice = self
        while slice.first == " " || slice.first == "\t" { slice.removeFirst() }
        while slice.last == " " || slice.last == "\t" { slice.removeLast() }
        return slice
    }
}
