// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A JWS in compact form, `header.payload.signature`, split and decoded but not yet verified.
struct CompactJWS {
    /// The protected header fields Sluice reads. Anything else (`x5u`, `jku`, `kid`) is ignored:
    /// keys come only from the `x5c` chain, which must lead to a configured root.
    struct Header: Decodable {
        var alg: String
        var x5c: [String]?
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
        self.signingInput = Array(compact.utf8[parts[0].startIndex..<parts[1].endIndex])
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
        // Split the UTF-8 bytes: Character-wise splitting of a 10 KB string costs more than the signature check.
        let parts = compact.utf8.split(separator: UInt8(ascii: "."), maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw Rejection(.malformed, "a JWS has three dot-separated parts")
        }
        return parts
    }
}
