// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import Shared
import Testing
import TestSupport
import NIOFoundationCompat

/// Real Apple-signed payloads, chained to the real Apple Root CA G3, verified at their signedDate.
struct AppleRealVectorTests {
    static func verifier(bundleIDs: Set<String>, appAppleID: Int64? = nil) throws -> AppleNotificationVerifier {
        let roots = try AppleChainVerifier.loadRoots(paths: [Vectors.url("apple/real/AppleRootCA-G3.cer").path])
        return AppleNotificationVerifier(
            chainVerifier: AppleChainVerifier(trustedRoots: roots),
            configuration: .init(bundleIDs: bundleIDs, appAppleID: appAppleID))
    }

    static func body(_ file: String) throws -> ByteBuffer {
        ByteBuffer(data: try JSONEncoder().encode(["signedPayload": try Vectors.text("apple/real/\(file)")]))
    }

    @Test func aRealProductionTestNotificationVerifiesAtItsSignedDate() async throws {
        let verifier = try Self.verifier(bundleIDs: ["com.nineton.taller"], appAppleID: 6_450_284_872)
        let record = try await verifier.verifyNotification(body: try Self.body("assn-v2-TEST-production-2024-10-17.jws"), sandbox: false)
        #expect(record.type == "TEST")
        #expect(record.environment == "Production")
        #expect(record.eventTime == Date(timeIntervalSince1970: 1_729_136_651.128))
    }

    @Test(.enabled(if: Vectors.exists("apple/real/assn-v2-DID_RENEW-sandbox-2025-10-01.jws"),
                   "the real Sandbox DID_RENEW comes from a repository without a license: read from SLUICE_EXTRA_VECTORS only"))
    func aRealSandboxRenewalVerifiesWithItsNestedTransactionAndRenewalInfo() async throws {
        let verifier = try Self.verifier(bundleIDs: ["com.loki-project.loki-messenger"])
        let record = try await verifier.verifyNotification(body: try Self.body("assn-v2-DID_RENEW-sandbox-2025-10-01.jws"), sandbox: true)
        #expect(record.type == "DID_RENEW")
        #expect(record.environment == "Sandbox")
        #expect(record.orderingKey?.isEmpty == false)
    }

    @Test func theRealPayloadsAreRefusedWhereTheyDoNotBelong() async throws {
        let verifier = try Self.verifier(bundleIDs: ["com.nineton.taller"], appAppleID: 1)
        await #expect(throws: Rejection(.wrongApp, "the notification's appAppleId is not APPLE_APP_APPLE_ID")) {
            try await verifier.verifyNotification(body: try Self.body("assn-v2-TEST-production-2024-10-17.jws"), sandbox: false)
        }
        await #expect(throws: Rejection.self) {
            try await verifier.verifyNotification(body: try Self.body("assn-v2-TEST-production-2024-10-17.jws"), sandbox: true)
        }
        let otherRoots = try AppleNotificationVerifier(
            chainVerifier: AppleChainVerifier(trustedRoots: AppleChainVerifier.loadRoots(paths: [Vectors.url("apple/real/AppleWWDRCAG6.cer").path])),
            configuration: .init(bundleIDs: ["com.nineton.taller"]))
        do {
            _ = try await otherRoots.verifyNotification(body: try Self.body("assn-v2-TEST-production-2024-10-17.jws"), sandbox: false)
            Issue.record("a chain anchored on the intermediate alone must not verify")
        } catch let rejection as Rejection {
            #expect(rejection.reason == .untrustedChain)
        }
    }

    @Test func thePEMAndDERRootsAreTheSameCertificate() throws {
        let der = try AppleChainVerifier.loadRoots(paths: [Vectors.url("apple/real/AppleRootCA-G3.cer").path])
        let pem = try AppleChainVerifier.loadRoots(paths: [Vectors.url("apple/real/AppleRootCA-G3.pem").path])
        #expect(der == pem)
    }
}
