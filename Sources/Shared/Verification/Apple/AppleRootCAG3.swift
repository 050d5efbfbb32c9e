// SPDX-License-Identifier: Apache-2.0
import Foundation
import SwiftASN1
public import X509

/// Apple Root CA - G3, the root that App Store Server Notifications V2, StoreKit 2 transactions
/// and App Store Server API answers chain to: trusted when `APPLE_ROOT_CERTIFICATES` is not set.
///
/// The DER of https://www.apple.com/certificateauthority/AppleRootCA-G3.cer, the same bytes as
/// `certificates/AppleRootCA-G3.cer` (see `certificates/README.md`; a test keeps them equal and
/// checks the pinned SHA-256). Valid from 2014-04-30 to 2039-04-30.
public enum AppleRootCAG3 {
    /// SHA-256 of the DER, as Apple publishes it.
    public static let sha256 = "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179"

    /// The certificate's DER, base64.
    public static let derBase64 = """
        MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwS
        QXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9u
        IEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN
        MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBS
        b290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9y
        aXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49
        AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf
        TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517
        IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr
        MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gA
        MGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4
        at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM
        6BgD56KyKA==
        """

    /// The parsed certificate.
    public static func certificate() throws -> Certificate {
        guard let der = Data(base64Encoded: derBase64.filter { !$0.isWhitespace }) else {
            throw ConfigurationError(variable: "APPLE_ROOT_CERTIFICATES", reason: "the built-in Apple Root CA - G3 is not base64")
        }
        return try Certificate(derEncoded: Array(der))
    }
}

/// The roots Apple payloads must chain to: the files `APPLE_ROOT_CERTIFICATES` names, or Apple
/// Root CA - G3 built in when it is not set.
public struct AppleTrustedRoots: Sendable {
    public var certificates: [Certificate]
    /// What the process logs at start: which roots it trusts.
    public var summary: String
    /// `true` when `APPLE_ROOT_CERTIFICATES` named them.
    public var areConfigured: Bool

    /// - Throws: ``ConfigurationError`` naming a file that cannot be read or holds no certificate.
    public static func configured(by environment: EnvironmentValues) throws -> AppleTrustedRoots {
        let paths = environment.list("APPLE_ROOT_CERTIFICATES")
        guard !paths.isEmpty else {
            return AppleTrustedRoots(
                certificates: [try AppleRootCAG3.certificate()],
                summary: "Apple Root CA - G3 (built in, SHA-256 \(AppleRootCAG3.sha256)); APPLE_ROOT_CERTIFICATES is not set",
                areConfigured: false)
        }
        let certificates = try AppleChainVerifier.loadRoots(paths: paths)
        return AppleTrustedRoots(
            certificates: certificates, summary: certificates.count == 1
                ? "the root certificate in APPLE_ROOT_CERTIFICATES" : "the \(certificates.count) root certificates in APPLE_ROOT_CERTIFICATES", areConfigured: true)
    }
}
