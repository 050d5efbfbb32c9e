// SPDX-License-Identifier: Apache-2.0

/// A parsed `Stripe-Signature` header: `t=1700000000,v1=<hex>[,v1=<hex>…]`.
///
/// Schemes other than `v1` (such as the test-mode `v0`) are ignored, as Stripe's libraries do.
/// The header is bounded before any HMAC is computed: at most ``maximumEntries`` entries, and a
/// `v1` value counts only when it is 64 hex digits (an HMAC-SHA256), so a stuffed header costs no
/// more to check than a real one.
public struct StripeSignatureHeader: Sendable, Equatable {
    /// More entries than this is a malformed header. Stripe sends `t`, one `v1` per endpoint secret
    /// still valid during a rotation, and in test mode a `v0`.
    public static let maximumEntries = 16

    /// The signing time, in seconds since 1970.
    public var timestamp: Int64
    /// The `v1=` values that are 64 hex digits, decoded to 32 bytes each.
    public var signatures: [[UInt8]]
    /// Whether the header had any `v1=` entry, well-formed or not.
    public var hasVersion1Entry: Bool

    /// - Throws: ``Rejection`` `malformed_signature` when there is no integer `t=`, no `v1=`, or more
    ///   than ``maximumEntries`` entries.
    public init(parsing header: Substring) throws(Rejection) {
        var timestamp: Int64?
        var signatures: [[UInt8]] = []
        var hasVersion1Entry = false
        var entries = 0
        for item in header.split(separator: ",", omittingEmptySubsequences: true) {
            entries += 1
            guard entries <= Self.maximumEntries else {
                throw Rejection(.malformedSignature, "Stripe-Signature has more than \(Self.maximumEntries) entries")
            }
            guard let equals = item.firstIndex(of: "=") else { continue }
            let key = item[..<equals].trimmingSpaces()
            let value = item[item.index(after: equals)...].trimmingSpaces()
            switch key {
            case "t": timestamp = Int64(value)
            case "v1":
                hasVersion1Entry = true
                if let bytes = SHA256Hex.bytes(value) { signatures.append(bytes) }
            default: continue
            }
        }
        guard let timestamp else {
            throw Rejection(.malformedSignature, "Stripe-Signature has no valid t= timestamp")
        }
        guard hasVersion1Entry else {
            throw Rejection(.malformedSignature, "Stripe-Signature has no v1 signature")
        }
        self.timestamp = timestamp
        self.signatures = signatures
        self.hasVersion1Entry = hasVersion1Entry
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
