// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Base64url (RFC 4648 §5, unpadded) as JWS segments use it.
///
/// Decoding works on the UTF-8 bytes directly: it runs three times per Apple notification on
/// kilobytes of certificate chain, where going through Foundation's string replacement cost
/// more than the signature checks themselves.
public enum Base64URL {
    /// Decodes a base64url segment; `nil` when it holds anything but the base64url alphabet
    /// (padding, `+` and `/` included) or has an impossible length.
    public static func decode(_ segment: Substring) -> [UInt8]? {
        decode(utf8: segment.utf8)
    }

    /// Decodes base64url text given as its UTF-8 bytes.
    public static func decode<Text: Collection<UInt8>>(utf8: Text) -> [UInt8]? {
        // A string's bytes are contiguous: decode them through a buffer, not the generic view.
        if let decoded = utf8.withContiguousStorageIfAvailable(decode(buffer:)) { return decoded }
        return decode(buffer: Array(utf8))
    }

    private static func decode(buffer: [UInt8]) -> [UInt8]? {
        buffer.withUnsafeBufferPointer(decode(buffer:))
    }

    private static func decode(buffer: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard buffer.count % 4 != 1 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(buffer.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        // The table read through one buffer: reading the global array per byte went through its
        // lazy initializer's check each time (~a third of the decoding's CPU).
        let valid = sextets.withUnsafeBufferPointer { sextets in
            for character in buffer {
                let value = sextets[Int(character)]
                guard value != invalid else { return false }
                accumulator = accumulator << 6 | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                    accumulator &= (1 << UInt32(bits)) - 1
                }
            }
            return true
        }
        return valid ? bytes : nil
    }

    /// Encodes bytes as unpadded base64url.
    public static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Marks a byte outside the alphabet in ``sextets``.
    private static let invalid: UInt8 = 0xFF

    /// Each byte's 6-bit value in the base64url alphabet, or ``invalid``.
    private static let sextets: [UInt8] = (0...255).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt8(byte) - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt8(byte) - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(byte) - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: invalid
        }
    }
}
