// SPDX-License-Identifier: Apache-2.0
public import Foundation
import Crypto
import Shared

/// Signs JSON payloads as Apple does: a compact JWS with `alg` ES256 and the chain in `x5c`.
public struct AppleJWSSigner: Sendable {
    public let pki: ApplePKI

    public init(pki: ApplePKI) {
        self.pki = pki
    }

    /// - Parameters:
    ///   - json: the payload's bytes.
    ///   - header: a header to use instead of `{"alg":"ES256","x5c":[…]}`, to forge bad ones in tests.
    public func sign(json: Data, header: [String: Any]? = nil) throws -> String {
        let header = try header ?? ["alg": "ES256", "x5c": pki.x5c]
        let headerJSON = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        let signingInput = Base64URL.encode(headerJSON) + "." + Base64URL.encode(json)
        let signature = try pki.leafKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// Signs any `Encodable` payload.
    public func sign(_ payload: some Encodable) throws -> String {
        try sign(json: JSONEncoder().encode(payload))
    }
}
