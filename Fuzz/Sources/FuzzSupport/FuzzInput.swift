// SPDX-License-Identifier: Apache-2.0

/// Splits one fuzz input into the several values a target needs, so that libFuzzer's mutations
/// reach each of them.
public struct FuzzInput {
    public private(set) var remaining: ArraySlice<UInt8>

    public init(_ bytes: UnsafeRawBufferPointer) {
        remaining = ArraySlice(bytes)
    }

    /// The bytes up to the first `separator` (consumed), or everything left when there is none.
    public mutating func take(until separator: UInt8) -> ArraySlice<UInt8> {
        guard let index = remaining.firstIndex(of: separator) else {
            defer { remaining = [] }
            return remaining
        }
        defer { remaining = remaining[(index + 1)...] }
        return remaining[..<index]
    }

    /// A part preceded by its length as two big-endian bytes (clamped to what is left).
    public mutating func takeLengthPrefixed() -> ArraySlice<UInt8> {
        guard remaining.count >= 2 else {
            defer { remaining = [] }
            return remaining
        }
        let length = Int(remaining[remaining.startIndex]) << 8 | Int(remaining[remaining.startIndex + 1])
        remaining = remaining.dropFirst(2)
        defer { remaining = remaining.dropFirst(length) }
        return remaining.prefix(length)
    }

    /// Everything not taken yet.
    public mutating func takeRest() -> ArraySlice<UInt8> {
        defer { remaining = [] }
        return remaining
    }
}
