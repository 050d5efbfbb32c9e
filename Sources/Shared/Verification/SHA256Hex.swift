// SPDX-License-Identifier: Apache-2.0
import Crypto
public import Foundation

/// A SHA-256 digest (or HMAC-SHA256) written as 64 hex digits, as in `Stripe-Signature` and in
/// the `sha256:<hex>` entries of `API_KEYS` and `SANDBOX_USERS`.
public enum SHA256Hex {
    /// 64 lower- or upper-case hex digits to their 32 bytes; `nil` for anything else (a sign, a
    /// space or another length included).
    public static func bytes(_ text: Substring) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = HexDigit.value(utf8[index]), let low = HexDigit.value(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// The SHA-256 digest of `bytes`, as 64 lower-case hex digits.
    public static func digest(of bytes: some DataProtocol) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }
}
