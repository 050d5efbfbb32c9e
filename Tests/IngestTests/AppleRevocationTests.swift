// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Shared
import Testing
import TestSupport

/// `APPLE_ONLINE_CHECKS=true`: the leaf and intermediate are checked by OCSP against a real
/// responder for the test PKI, answering signed *good* or *revoked*, or not answering at all.
@Suite(.timeLimit(.minutes(3)))
struct AppleRevocationTests {
    static func onlineChecks(trusting pki: ApplePKI, on: Bool = true) throws -> [String: String] {
        ["APPLE_ROOT_CERTIFICATES": try TestCredentials.rootFile(pki), "APPLE_ONLINE_CHECKS": on ? "true" : "false"]
    }

    static func notification(signedBy pki: ApplePKI) throws -> Data {
        try AppleWebhookTests.body(signer: AppleJWSSigner(pki: pki))
    }

    @Test func goodAnswersAdmitTheNotificationAndAreRemembered() async throws {
        try await OCSPResponderStandIn.run { responder, pki in
            try await IngestHarness.withIngest(environment: try Self.onlineChecks(trusting: pki)) { client, db async throws in
                for _ in 0..<3 {
                    let response = try await client.postApple(try Self.notification(signedBy: pki))
                    #expect(response.status == .ok, "\(response.text)")
                }
                #expect(try await db.eventCount(source: "apple") == 3)
                // One question for the leaf and one for the intermediate, then the answers are relied on.
                #expect(responder.requestCount == 2)
            }
        }
    }

    /// Posts of one chain while its check runs wait for that check: one question per certificate.
    @Test func concurrentPostsOfOneChainShareOneCheck() async throws {
        try await OCSPResponderStandIn.run { responder, pki in
            responder.answer(after: .milliseconds(400))
            try await IngestHarness.withIngest(environment: try Self.onlineChecks(trusting: pki)) { client, db async throws in
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for _ in 0..<8 { group.addTask { try await client.postApple(try Self.notification(signedBy: pki)).status } }
                    return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
                }
                #expect(statuses == Array(repeating: .ok, count: 8))
                #expect(try await db.eventCount(source: "apple") == 8)
                #expect(responder.requestCount == 2)
            }
        }
    }

    /// No usable answer is remembered briefly: a burst of posts while the responder fails costs
    /// one check, each post still a 503 that Apple retries.
    @Test func aFailedCheckIsRememberedBriefly() async throws {
        try await OCSPResponderStandIn.run { responder, pki in
            responder.behave(.httpError)
            try await IngestHarness.withIngest(environment: try Self.onlineChecks(trusting: pki)) { client, db async throws in
                for _ in 0..<3 {
                    let response = try await client.postApple(try Self.notification(signedBy: pki))
                    #expect(response.status == .serviceUnavailable)
                    #expect(response.errorCode == "revocation_unknown")
                }
                #expect(responder.requestCount == 1)
                #expect(try await db.eventCount() == 0)
            }
        }
    }

    /// A post of the real chain with a junk signature is refused before any OCSP request.
    @Test func aJunkSignatureIsRefusedWithoutAskingTheResponder() async throws {
        try await OCSPResponderStandIn.run { responder, pki in
            let body = try #require(try JSONSerialization.jsonObject(with: try Self.notification(signedBy: pki)) as? [String: String])
            let parts = try #require(body["signedPayload"]).split(separator: ".")
            let junk = Data(repeating: 7, count: 64).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let forged = try JSONSerialization.data(withJSONObject: ["signedPayload": "\(parts[0]).\(parts[1]).\(junk)"])
            try await IngestHarness.withIngest(environment: try Self.onlineChecks(trusting: pki)) { client, db async throws in
                for _ in 0..<3 {
                    let response = try await client.postApple(forged)
                    #expect(response.status == .unauthorized, "\(response.text)")
                    #expect(response.errorCode == "bad_signature")
                }
                #expect(responder.requestCount == 0, "no OCSP request for a signature that does not verify")
                #expect(try await db.eventCount() == 0)
            }
        }
    }

    enum Revoked: String, CaseIterable { case leaf, intermediate }

    @Test(arguments: Revoked.allCases)
    func aRevokedCertificateIsRefused(_ which: Revoked) async throws {
        try await OCSPResponderStandIn.run { responder, pki in
            responder.revoke(which == .leaf ? pki.leaf : pki.intermediate)
            try await Self.expectRefused(try Self.notification(signedBy: pki), trusting: pki, status: .unauthorized, code: "revoked")
        }
    }

    @Test func anUnreachableResponderIsA503AndNothingIsStored() async throws {
        // Port 1 on the loopback refuses at once: nothing listens there.
        let pki = try ApplePKI.generate(name: "Unreachable OCSP", ocspResponder: "http://127.0.0.1:1")
        try await Self.expectRefused(
            try Self.notification(signedBy: pki), trusting: pki, status: .serviceUnavailable, code: "revocation_unknown")
    }

    /// An answer past its `nextUpdate` (more than swift-certificates' 75 minutes of leeway) is no answer.
    @Test(arguments: [OCSPResponderStandIn.Behaviour.httpError, .garbage, .answer(validity: -3 * 3_600)])
    func noUsableAnswerIsA503(_ behaviour: OCSPResponderStandIn.Behaviour) async throws {
        try await OCSPResponderStandIn.run { responder, pki in
            responder.behave(behaviour)
            try await Self.expectRefused(
                try Self.notification(signedBy: pki), trusting: pki, status: .serviceUnavailable, code: "revocation_unknown")
        }
    }

    @Test func anAnswerIsReliedOnUntilItsNextUpdateOnly() async throws {
        try await OCSPResponderStandIn.run { responder, pki in
            // Long enough for the first two posts on a loaded machine, short enough to wait out.
            responder.behave(.answer(validity: 6))
            try await IngestHarness.withIngest(environment: try Self.onlineChecks(trusting: pki)) { client, db async throws in
                #expect(try await client.postApple(try Self.notification(signedBy: pki)).status == .ok)
                responder.revoke(pki.leaf)
                // Within the answer's validity the good answer stands, as OCSP means it to.
                #expect(try await client.postApple(try Self.notification(signedBy: pki)).status == .ok)
                try await Task.sleep(for: .seconds(6.5))
                let response = try await client.postApple(try Self.notification(signedBy: pki))
                #expect(response.status == .unauthorized, "\(response.text)")
                #expect(response.errorCode == "revoked")
                #expect(try await db.eventCount(source: "apple") == 2)
                // Two questions at first; then the leaf's status, revoked, ends the check before the intermediate's.
                #expect(responder.requestCount == 3)
            }
        }
    }

    @Test func withoutOnlineChecksNoResponderIsAsked() async throws {
        let pki = try ApplePKI.generate(name: "Offline", ocspResponder: "http://127.0.0.1:1")
        try await IngestHarness.withIngest(environment: try Self.onlineChecks(trusting: pki, on: false)) { client, db async throws in
            let response = try await client.postApple(try Self.notification(signedBy: pki))
            #expect(response.status == .ok, "\(response.text)")
            #expect(try await db.eventCount(source: "apple") == 1)
        }
    }

    static func expectRefused(_ body: Data, trusting pki: ApplePKI, status: HTTPResponse.Status, code: String) async throws {
        try await IngestHarness.withIngest(environment: try onlineChecks(trusting: pki)) { client, db async throws in
            let response = try await client.postApple(body)
            #expect(response.status == status, "\(response.text)")
            #expect(response.errorCode == code, "\(response.text)")
            #expect(try await db.eventCount() == 0)
        }
    }
}
