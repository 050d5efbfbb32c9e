// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A JWS in compact form, `header.payload.signature`, split and decoded but not yet verified.
struct CompactJWS {
    /// The protected header fields Sluice reads. Anything else (`x5u`, `jku`) is ignored: an
    /// Apple payload's key comes only from its `x5c` chain, which must lead to a configured root;
    /// a Google token's only from Google's published set, by its `kid`.
    struct Header: Decodable {
        var alg: String
        var x5c: [String]?
        var kid: String?
    }

    /// The largest JWS accepted; real App Store payloads are under 20 KB.
    static let maximumLength = 256 * 1024

    let header: Header
    let payload: [UInt8]
    /// `header.payload` as ASCII bytes: what the signature covers.
    let signingInput: [UInt8]
    let signature: [UInt8]

    /// - Throws: ``Rejection`` `malformed` for anything that is not a three-part base64url JWS with a JSON header.
    init(_ compact: String) throws(Rejection) {
        let parts = try Self.parts(of: compact)
        guard let headerBytes = Base64URL.decode(utf8: parts[0]),
              let payload = Base64URL.decode(utf8: parts[1]),
              let signature = Base64URL.decode(utf8: parts[2])
        else {
            throw Rejection(.malformed, "a JWS part is not base64url")
        }
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(headerBytes))
        } catch {
            throw Rejection(.malformed, "the JWS header is not JSON with an alg")
        }
        self.payload = payload
        self.signingInput = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
        self.signature = signature
    }

    /// The payload alone of a JWS that was verified before (a stored row the worker reads): the
    /// header, with its kilobytes of certificate chain, and the signature are not decoded.
    ///
    /// - Throws: ``Rejection`` `malformed` as ``init(_:)`` does for the parts and the payload.
    static func payload(of compact: String) throws(Rejection) -> [UInt8] {
        guard let payload = Base64URL.decode(utf8: try parts(of: compact)[1]) else {
            throw Rejection(.malformed, "a JWS part is not base64url")
        }
        return payload
    }

    /// The three parts' UTF-8 bytes, the first two not empty.
    private static func parts(of compact: String) throws(Rejection) -> [Substring.UTF8View.SubSequence] {
        guard compact.utf8.count <= maximumLength else {
            throw Rejection(.malformed, "the JWS is longer than \(maximumLength) bytes")
        }
        // Find the dots in the contiguous UTF-8 bytes: splitting by Character, or through the
        // generic UTF-8 view, of a 10 KB string cost more than the signature check.
        var text = compact
        let dots = text.withUTF8 { bytes in
            var dots: [Int] = []
            for (offset, byte) in bytes.enumerated() where byte == UInt8(ascii: ".") {
                dots.append(offset)
                if dots.count == 3 { break }
            }
            return dots
        }
        guard dots.count == 2, dots[0] > 0, dots[1] > dots[0] + 1 else {
            throw Rejection(.malformed, "a JWS has three dot-separated parts")
        }
        let utf8 = text.utf8
        let first = utf8.index(utf8.startIndex, offsetBy: dots[0]), second = utf8.index(utf8.startIndex, offsetBy: dots[1])
        return [utf8[utf8.startIndex..<first], utf8[utf8.index(after: first)..<second], utf8[utf8.index(after: second)...]]
    }
}
