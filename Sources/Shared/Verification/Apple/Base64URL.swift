// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Base64url (RFC 4648 §5, unpadded) as JWS segments use it.
public enum Base64URL {
    /// Decodes a base64url segment; `nil` when it is not base64url.
    public static func decode(_ segment: Substring) -> [UInt8]? {
        var text = String(segment)
        guard text.utf8.allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "=") })
        else { return nil }
        text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let remainder = text.utf8.count % 4
        guard remainder != 1 else { return nil }
        if remainder > 0 { text += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: text).map { Array($0) }
    }

    /// Encodes bytes as unpadded base64url.
    public static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
