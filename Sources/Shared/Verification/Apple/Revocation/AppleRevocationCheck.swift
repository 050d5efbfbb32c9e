// SPDX-License-Identifier: Apache-2.0
public import Foundation
import NIOCore
@_spi(FixedExpiryValidationTime) import X509

/// Online revocation checks of Apple's signing chain (`APPLE_ONLINE_CHECKS=true`), as Apple's
/// App Store Server Library does with its online checks on: the leaf's and the intermediate's
/// status is asked of the OCSP responder each names, with swift-certificates'
/// `OCSPVerifierPolicy` in hard-fail mode.
///
/// A chain passes only on a verified *good* answer for both. A *revoked* answer is
/// ``Rejection/Reason/revoked``; no usable answer at all (responder unreachable, an HTTP error,
/// an answer that does not verify or is out of date, *unknown*) is
/// ``Rejection/Reason/revocationUnknown``, a `503`, so that Apple sends the notification again.
public struct AppleRevocationCheck: Sendable {
    /// A good answer is relied on until its `nextUpdate`, and never longer than this: Apple's
    /// library trusts a checked chain for 15 minutes.
    public static let maximumReliance: TimeInterval = 15 * 60

    /// For each request to a responder; the policy also bounds the whole check to 10 s.
    let timeout: TimeAmount

    public init(timeoutSeconds: Int64 = 5) {
        self.timeout = .seconds(timeoutSeconds)
    }

    /// Checks `leaf` and `intermediate` now.
    ///
    /// - Parameter validAt: a time at which the chain was path-validated. RFC 5280 processing is
    ///   repeated at that time (the verifier refuses critical extensions no policy handles), so
    ///   that only the OCSP answers can fail here.
    /// - Returns: until when the answers may be relied on.
    /// - Throws: ``Rejection``: `revoked` or `revocation_unknown`.
    func check(
        leaf: Certificate, intermediate: Certificate, roots: [Certificate], validAt: Date, now: Date = Date()
    ) async throws(Rejection) -> Date {
        let requester = OCSPHTTPRequester(timeout: timeout)
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy(fixedExpiryValidationTime: validAt)
            OCSPVerifierPolicy(failureMode: .hard, requester: requester)
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        guard case .validCertificate = result else {
            let reasons = if case .couldNotValidate(let failures) = result { failures.map(\.policyFailureReason.description) } else { [String]() }
            if reasons.contains(where: { $0.hasPrefix(Self.revokedReasonPrefix) }) {
                throw Rejection(.revoked, "the OCSP responder says the leaf or intermediate certificate is revoked")
            }
            throw Rejection(.revocationUnknown, "the certificates' revocation status could not be checked: \(reasons.first?.prefix(300) ?? "no reason given")")
        }
        let cap = now.addingTimeInterval(Self.maximumReliance)
        return requester.answers.all.compactMap(OCSPAnswerValidity.nextUpdate(of:)).reduce(cap) { min($0, $1) }
    }

    /// How `OCSPVerifierPolicy` words a revoked answer (swift-certificates 1.x).
    static let revokedReasonPrefix = "revoked through OCSP"
}

extension AppleRevocationCheck {
    /// `APPLE_ONLINE_CHECKS` (default `false`): a check when it is `true`, otherwise `nil`.
    public static func configured(by environment: EnvironmentValues) throws -> AppleRevocationCheck? {
        try environment.bool("APPLE_ONLINE_CHECKS", default: false) ? AppleRevocationCheck() : nil
    }
}
