// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// Random identifiers for rows and messages, from the system's generator.
///
/// Foundation's `UUID()` on Linux opens `/dev/urandom` for every identifier; applying a batch
/// makes several per event, and those opens were 1.5 % of the worker's CPU in
/// `scripts/bench-profile` (Benchmarks/README.md). `SystemRandomNumberGenerator` asks the kernel
/// with `getrandom`, without a file.
public enum RandomIdentifier {
    /// 128 random bits as a version 4, variant 1 UUID (RFC 9562, section 5.4).
    public static func uuid() -> UUID {
        var generator = SystemRandomNumberGenerator()
        return uuid(using: &generator)
    }

    /// ``uuid()`` from `generator`: tests pass a seeded one.
    public static func uuid(using generator: inout some RandomNumberGenerator) -> UUID {
        let high = generator.next() as UInt64, low = generator.next() as UInt64
        var bytes = withUnsafeBytes(of: high.bigEndian) { Array($0) } + withUnsafeBytes(of: low.bigEndian) { Array($0) }
        bytes[6] = bytes[6] & 0x0F | 0x40  // version 4
        bytes[8] = bytes[8] & 0x3F | 0x80  // variant 1 (RFC 9562)
        return UUID(uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// The 32 lower-case hex digits of a fresh ``uuid()``, without dashes (`msg_…` ids).
    public static func hexDigits() -> String {
        hexDigits(of: uuid())
    }

    /// The 32 lower-case hex digits of `uuid`, in its byte order, without dashes.
    public static func hexDigits(of uuid: UUID) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 32) { buffer in
                for (index, byte) in bytes.enumerated() {
                    buffer[2 * index] = digits[Int(byte >> 4)]
                    buffer[2 * index + 1] = digits[Int(byte & 0x0F)]
                }
                return 32
            }
        }
    }
}
