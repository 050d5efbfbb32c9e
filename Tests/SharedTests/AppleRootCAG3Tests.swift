// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import NIOCore
import Shared
import Testing
import TestSupport
import X509
import NIOFoundationCompat

/// The built-in Apple Root CA - G3 (`APPLE_ROOT_CERTIFICATES` unset): the bytes the repository
/// ships in `certificates/`, Apple's published fingerprint, and a real notification verified with it.
struct AppleRootCAG3Tests {
    static func hex(_ digest: SHA256.Digest) -> String { digest.map { String(format: "%02X", $0) }.joined() }

    @Test func theBuiltInRootIsTheShippedFileWithApplesFingerprint() throws {
        let builtIn = try #require(Data(base64Encoded: AppleRootCAG3.derBase64.filter { !$0.isWhitespace }))
        let shipped = try Data(contentsOf: Vectors.repository.appendingPathComponent("certificates/AppleRootCA-G3.cer"))
        #expect(builtIn == shipped)
        #expect(builtIn == (try Data(contentsOf: Vectors.url("apple/real/AppleRootCA-G3.cer"))))
        #expect(Self.hex(SHA256.hash(data: builtIn)) == AppleRootCAG3.sha256)
        #expect(AppleRootCAG3.sha256 == "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179")
        let readme = try String(contentsOf: Vectors.repository.appendingPathComponent("certificates/README.md"), encoding: .utf8)
        #expect(readme.contains(AppleRootCAG3.sha256), "certificates/README.md states the fingerprint")
        #expect(try AppleRootCAG3.certificate().subject.description.contains("Apple Root CA - G3"))
    }

    @Test func unsetRootsTrustAppleAndARealNotificationVerifies() async throws {
        let roots = try AppleTrustedRoots.configured(by: EnvironmentValues([:]))
        #expect(!roots.areConfigured)
        #expect(roots.summary.contains("built in"))
        let verifier = AppleNotificationVerifier(
            chainVerifier: AppleChainVerifier(trustedRoots: roots.certificates),
            configuration: .init(bundleIDs: ["com.nineton.taller"], appAppleID: 6_450_284_872))
        let body = ByteBuffer(data: try JSONEncoder().encode(["signedPayload": try Vectors.text("apple/real/assn-v2-TEST-production-2024-10-17.jws")]))
        let record = try await verifier.verifyNotification(body: body, sandbox: false)
        #expect(record.type == "TEST")
    }

    @Test func configuredRootsReplaceTheBuiltInOne() throws {
        let roots = try AppleTrustedRoots.configured(by: EnvironmentValues(["APPLE_ROOT_CERTIFICATES": TestCredentials.rootPath]))
        #expect(roots.areConfigured)
        #expect(roots.certificates.count == 1)
        #expect(roots.certificates.first != (try AppleRootCAG3.certificate()))
    }
}
