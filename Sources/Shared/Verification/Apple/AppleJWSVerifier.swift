// SPDX-License-Identifier: Apache-2.0
import Foundation
import Crypto

/// Verifies one Apple-signed JWS (a notification's `signedPayload`, its nested
/// `signedTransactionInfo` / `signedRenewalInfo`, or a StoreKit 2 `signedTransaction`) and decodes its payload.
///
/// Checks, in order: compact form and JSON header; `alg` is ES256 (never `none`, HS*, RS*…);
/// the `x5c` chain leads to a trusted root with Apple's marker extensions at the payload's
/// `signedDate`; the ES256 signature verifies with the leaf key. No URL in the header is followed.
public struct AppleJWSVerifier: Sendable {
    let chainVerifier: AppleChainVerifier

    public init(chainVerifier: AppleChainVerifier) {
        self.chainVerifier = chainVerifier
    }

    /// - Returns: the decoded payload, once everything verified.
    /// - Throws: ``Rejection``.
    public func verify<Payload: AppleSignedPayload>(_ compact: String, as: Payload.Type) async throws(Rejection) -> Payload {
        let jws = try CompactJWS(compact)
        guard jws.header.alg == "ES256" else {
            throw Rejection(.unsupportedAlgorithm, "JWS alg \(jws.header.alg.prefix(16)) is not ES256")
        }
        guard let x5c = jws.header.x5c else {
            throw Rejection(.untrustedChain, "the JWS header has no x5c chain")
        }
        let payload: Payload
        do {
            payload = try AppleJSON.decoder.decode(Payload.self, from: Data(jws.payload))
        } catch {
            throw Rejection(.malformed, "the JWS payload is not a valid \(Payload.displayName)")
        }
        // The signedDate is read before the signature is checked only to choose the validation
        // time; nothing else of the payload is used unless the signature verifies.
        // The signature is checked before the revocation status: a junk signature costs no OCSP request.
        try await chainVerifier.verify(x5c: x5c, at: payload.signedDate ?? Date()) { key throws(Rejection) in
            guard jws.signature.count == 64,
                  let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jws.signature),
                  key.isValidSignature(signature, for: jws.signingInput)
            else {
                throw Rejection(.badSignature, "the ES256 signature of the \(Payload.displayName) does not verify")
            }
        }
        return payload
    }
}
