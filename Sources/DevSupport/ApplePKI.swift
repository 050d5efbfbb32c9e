// SPDX-License-Identifier: Apache-2.0
public import Crypto
public import Foundation
public import SwiftASN1
public import X509

/// A root, intermediate and leaf shaped like Apple's App Store signing chain (ECDSA P-256, with
/// Apple's marker extensions), for tests, benchmarks and local development — never for production.
///
/// ```swift
/// let pki = try await ApplePKI.generate()
/// let jws = try AppleJWSSigner(pki: pki).sign(json: payload)
/// ```
public struct ApplePKI: Sendable {
    /// What to get wrong on purpose, to test that verification rejects it.
    public struct Flaws: Sendable {
        public var leafWithoutMarker = false
        public var intermediateWithoutMarker = false
        /// The leaf's validity; by default ten years around now.
        public var leafValidity: ClosedRange<Date>?

        public init(leafWithoutMarker: Bool = false, intermediateWithoutMarker: Bool = false, leafValidity: ClosedRange<Date>? = nil) {
            self.leafWithoutMarker = leafWithoutMarker
            self.intermediateWithoutMarker = intermediateWithoutMarker
            self.leafValidity = leafValidity
        }
    }

    public static let leafMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    public static let intermediateMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]

    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    public let leafKey: P256.Signing.PrivateKey
    /// The issuers' keys, to sign OCSP answers in tests; `nil` for a chain read from files.
    public let intermediateKey: P256.Signing.PrivateKey?
    public let rootKey: P256.Signing.PrivateKey?

    public init(
        root: Certificate, intermediate: Certificate, leaf: Certificate, leafKey: P256.Signing.PrivateKey,
        intermediateKey: P256.Signing.PrivateKey? = nil, rootKey: P256.Signing.PrivateKey? = nil
    ) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.leafKey = leafKey
        self.intermediateKey = intermediateKey
        self.rootKey = rootKey
    }

    /// The paths under `ocspResponder` that the leaf's and the intermediate's Authority Information
    /// Access name: the leaf's status is answered by the intermediate, the intermediate's by the root.
    public static let leafOCSPPath = "/ocsp/wwdr"
    public static let intermediateOCSPPath = "/ocsp/root"

    /// Makes a new chain with fresh keys.
    ///
    /// - Parameters:
    ///   - name: a word that goes into every subject, to tell chains apart.
    ///   - flaws: what to get wrong on purpose.
    ///   - ocspResponder: a base URL such as `http://127.0.0.1:8080`; when given, the leaf and the
    ///     intermediate name an OCSP responder under it, as Apple's do.
    public static func generate(name: String = "Sluice Test", flaws: Flaws = .init(), ocspResponder: String? = nil) throws -> ApplePKI {
        let now = Date()
        let decade = now.addingTimeInterval(-86_400 * 365)...now.addingTimeInterval(86_400 * 365 * 10)
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName { CommonName("\(name) Root CA"); OrganizationName("Sluice") }
        let intermediateName = try DistinguishedName { CommonName("\(name) WWDR Intermediate"); OrganizationName("Sluice") }
        let leafName = try DistinguishedName { CommonName("\(name) Receipt Signing"); OrganizationName("Sluice") }

        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey),
            notValidBefore: decade.lowerBound, notValidAfter: decade.upperBound.addingTimeInterval(86_400 * 365),
            issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: Certificate.PublicKey(rootKey.publicKey))
            },
            issuerPrivateKey: .init(rootKey))
        let intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: decade.lowerBound, notValidAfter: decade.upperBound,
            issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: Certificate.PublicKey(intermediateKey.publicKey))
                AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: Certificate.PublicKey(rootKey.publicKey)).keyIdentifier)
                if !flaws.intermediateWithoutMarker { Self.marker(intermediateMarkerOID) }
                if let ocspResponder { Self.ocsp(ocspResponder + intermediateOCSPPath) }
            },
            issuerPrivateKey: .init(rootKey))
        let leafValidity = flaws.leafValidity ?? decade
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey),
            notValidBefore: leafValidity.lowerBound, notValidAfter: leafValidity.upperBound,
            issuer: intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: Certificate.PublicKey(intermediateKey.publicKey)).keyIdentifier)
                if !flaws.leafWithoutMarker { Self.marker(leafMarkerOID) }
                if let ocspResponder { Self.ocsp(ocspResponder + leafOCSPPath) }
            },
            issuerPrivateKey: .init(intermediateKey))
        return ApplePKI(
            root: root, intermediate: intermediate, leaf: leaf, leafKey: leafKey, intermediateKey: intermediateKey, rootKey: rootKey)
    }

    private static func ocsp(_ url: String) -> AuthorityInformationAccess {
        AuthorityInformationAccess([.init(method: .ocspServer, location: .uniformResourceIdentifier(url))])
    }

    /// Apple's marker extensions hold an ASN.1 NULL.
    private static func marker(_ oid: ASN1ObjectIdentifier) -> Certificate.Extension {
        Certificate.Extension(oid: oid, critical: false, value: [0x05, 0x00])
    }

    /// The `x5c` header value: leaf, intermediate, root, each standard base64 DER.
    public var x5c: [String] {
        get throws { try [leaf, intermediate, root].map { Data(try $0.derBytes()).base64EncodedString() } }
    }

    // MARK: Files, for `sluice-dev pki` and scripts/dev

    /// Writes `root.pem` (what `APPLE_ROOT_CERTIFICATES` names), `intermediate.pem`, `leaf.pem` and `leaf-key.pem`.
    public func write(to directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try root.serializeAsPEM().pemString.write(to: directory.appendingPathComponent("root.pem"), atomically: true, encoding: .utf8)
        try intermediate.serializeAsPEM().pemString.write(to: directory.appendingPathComponent("intermediate.pem"), atomically: true, encoding: .utf8)
        try leaf.serializeAsPEM().pemString.write(to: directory.appendingPathComponent("leaf.pem"), atomically: true, encoding: .utf8)
        try leafKey.pemRepresentation.write(to: directory.appendingPathComponent("leaf-key.pem"), atomically: true, encoding: .utf8)
    }

    /// Reads what ``write(to:)`` wrote.
    public static func load(from directory: URL) throws -> ApplePKI {
        func read(_ name: String) throws -> String {
            try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
        }
        return ApplePKI(
            root: try Certificate(pemEncoded: try read("root.pem")),
            intermediate: try Certificate(pemEncoded: try read("intermediate.pem")),
            leaf: try Certificate(pemEncoded: try read("leaf.pem")),
            leafKey: try P256.Signing.PrivateKey(pemRepresentation: try read("leaf-key.pem")))
    }
}

extension Certificate {
    /// The certificate's DER encoding.
    public func derBytes() throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(self)
        return serializer.serializedBytes
    }
}
