// SPDX-License-Identifier: Apache-2.0
import Foundation
import Crypto
import SwiftASN1
import Synchronization
@_spi(FixedExpiryValidationTime) public import X509

/// Validates an `x5c` chain — leaf, intermediate, (root) — to a trusted root and returns the
/// leaf's ES256 key.
///
/// The chain is validated by X.509 path validation (RFC 5280) at the payload's `signedDate`,
/// anchored only on the configured roots: `x5c[2]` is never trusted or even used, so a chain
/// that carries its own root proves nothing by it. A chain that validated once is remembered by
/// the SHA-256 of its leaf and intermediate DER, with the window in which all three certificates
/// are valid, so the same chain is not path-validated again for every notification.
///
/// With a ``AppleRevocationCheck`` (`APPLE_ONLINE_CHECKS`), a chain is also checked by OCSP: one
/// check per chain at a time, its answer remembered for as long as it holds (``RevocationFlights``).
public final class AppleChainVerifier: Sendable {
    private struct ValidatedChain {
        var key: P256.Signing.PublicKey
        var validFrom: Date
        var validUntil: Date
        var leaf: Certificate
        var intermediate: Certificate
    }

    /// Chains remembered at most; Apple signs with a handful of leaves at a time.
    static let cacheCapacity = 64

    private let roots: [Certificate]
    private let revocationCheck: AppleRevocationCheck?
    private let cache = Mutex([[UInt8]: ValidatedChain]())
    private let revocationFlights = RevocationFlights()

    /// - Parameters:
    ///   - trustedRoots: the roots a chain must lead to (Apple Root CA G3 in production).
    ///   - revocationCheck: OCSP checks of each chain, or `nil` for none (the default, as in Apple's library).
    public init(trustedRoots: [Certificate], revocationCheck: AppleRevocationCheck? = nil) {
        self.roots = trustedRoots
        self.revocationCheck = revocationCheck
    }

    /// Reads root certificates from DER or PEM files (`APPLE_ROOT_CERTIFICATES`).
    ///
    /// - Throws: ``ConfigurationError`` naming a file that cannot be read or holds no certificate.
    public static func loadRoots(paths: [String]) throws -> [Certificate] {
        try paths.flatMap { path -> [Certificate] in
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError(variable: "APPLE_ROOT_CERTIFICATES", reason: "names \(path), which cannot be read")
            }
            if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
                let documents = try? PEMDocument.parseMultiple(pemString: text)
                let certificates = (documents ?? []).compactMap { try? Certificate(pemDocument: $0) }
                guard !certificates.isEmpty else {
                    throw ConfigurationError(variable: "APPLE_ROOT_CERTIFICATES", reason: "names \(path), which holds no PEM certificate")
                }
                return certificates
            }
            do {
                return [try Certificate(derEncoded: Array(data))]
            } catch {
                throw ConfigurationError(variable: "APPLE_ROOT_CERTIFICATES", reason: "names \(path), which is neither a DER nor a PEM certificate")
            }
        }
    }

    /// Checks a signature with the leaf key of a chain valid at `time`, then (online checks) the
    /// chain's revocation status: in that order, so that a post of Apple's public chain with a
    /// junk signature costs no OCSP request.
    ///
    /// - Parameters:
    ///   - x5c: standard-base64 DER certificates, leaf first.
    ///   - time: the payload's `signedDate`, or now when it has none.
    ///   - verifySignature: throws when the leaf key does not verify the signature.
    /// - Throws: ``Rejection``: `malformed`, `untrusted_chain` or `missing_oid`, what
    ///   `verifySignature` throws; with online checks, `revoked` or `revocation_unknown`.
    func verify(
        x5c: [String], at time: Date, verifySignature: (P256.Signing.PublicKey) throws(Rejection) -> Void
    ) async throws(Rejection) {
        let (cacheKey, chain) = try await validatedChain(x5c: x5c, at: time)
        try verifySignature(chain.key)
        guard let revocationCheck else { return }
        let roots = roots
        try await revocationFlights.status(of: cacheKey) { () async throws(Rejection) -> Date in
            try await revocationCheck.check(leaf: chain.leaf, intermediate: chain.intermediate, roots: roots, validAt: chain.validFrom)
        }
    }

    /// The chain from the cache, or path-validated and then remembered.
    private func validatedChain(x5c: [String], at time: Date) async throws(Rejection) -> ([UInt8], ValidatedChain) {
        guard x5c.count == 3 else {
            throw Rejection(.untrustedChain, "x5c must hold exactly three certificates, it holds \(x5c.count)")
        }
        guard x5c[0].utf8.count <= 16_384, x5c[1].utf8.count <= 16_384,
              let leafDER = Data(base64Encoded: x5c[0]), let intermediateDER = Data(base64Encoded: x5c[1])
        else {
            throw Rejection(.malformed, "an x5c certificate is not base64")
        }
        let cacheKey = Array(SHA256.hash(data: leafDER + intermediateDER))
        if let cached = cache.withLock({ $0[cacheKey] }), cached.validFrom <= time, time <= cached.validUntil {
            return (cacheKey, cached)
        }

        let leaf: Certificate
        let intermediate: Certificate
        do {
            leaf = try Certificate(derEncoded: Array(leafDER))
            intermediate = try Certificate(derEncoded: Array(intermediateDER))
        } catch {
            throw Rejection(.malformed, "an x5c entry is not a DER certificate")
        }
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy(fixedExpiryValidationTime: time)
            AppleMarkerExtensionsPolicy()
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        guard case .validCertificate(let chain) = result else {
            if case .couldNotValidate(let failures) = result,
               failures.contains(where: { $0.policyFailureReason.description == AppleMarkerExtensionsPolicy.failureReason }) {
                throw Rejection(.missingOID, "the leaf or intermediate lacks Apple's marker extension")
            }
            throw Rejection(.untrustedChain, "the x5c chain does not lead to a trusted root at signedDate \(time)")
        }
        guard let key = P256.Signing.PublicKey(chain.leaf.publicKey) else {
            throw Rejection(.untrustedChain, "the leaf key is not a P-256 key")
        }
        let validated = ValidatedChain(
            key: key,
            validFrom: chain.map(\.notValidBefore).max() ?? time,
            validUntil: chain.map(\.notValidAfter).min() ?? time,
            leaf: leaf, intermediate: intermediate)
        remember(validated, as: cacheKey)
        return (cacheKey, validated)
    }

    private func remember(_ chain: ValidatedChain, as cacheKey: [UInt8]) {
        cache.withLock { cache in
            if cache.count >= Self.cacheCapacity && cache[cacheKey] == nil { cache.removeAll(keepingCapacity: true) }
            cache[cacheKey] = chain
        }
    }
}
