// SPDX-License-Identifier: Apache-2.0
import SwiftASN1
import X509

/// Requires Apple's marker extensions: `1.2.840.113635.100.6.11.1` on the leaf (App Store receipt
/// signing) and `1.2.840.113635.100.6.2.1` on the intermediate (WWDR), with a three-certificate chain.
struct AppleMarkerExtensionsPolicy: VerifierPolicy {
    static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    /// The failure text, recognised to report `missing_oid` rather than `untrusted_chain`.
    static let failureReason = "missing an Apple marker extension"

    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        let certificates = Array(chain)
        guard certificates.count == 3 else {
            return .failsToMeetPolicy(reason: "an Apple chain has exactly three certificates")
        }
        guard certificates[0].extensions[oid: Self.leafOID] != nil,
              certificates[1].extensions[oid: Self.intermediateOID] != nil
        else {
            return .failsToMeetPolicy(reason: Self.failureReason)
        }
        return .meetsPolicy
    }
}
