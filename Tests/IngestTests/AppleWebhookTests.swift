// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import Shared
import Testing
import TestSupport
import PostgresNIO

@Suite(.timeLimit(.minutes(3)))
struct AppleWebhookTests {
    static var signer: AppleJWSSigner { IngestHarness.signer }

    static func transaction(
        environment: String = "Sandbox", bundleID: String = IngestHarness.bundleID, signedDate: Date = Date()
    ) -> SampleAppleTransaction {
        SampleAppleTransaction(
            transactionId: "\(Int.random(in: 1_000_000...9_999_999))", bundleId: bundleID, environment: environment,
            signedDate: signedDate, appAccountToken: UUID().uuidString.lowercased())
    }

    static func body(
        signer: AppleJWSSigner = signer, environment: String = "Sandbox", bundleID: String = IngestHarness.bundleID,
        signedDate: Date = Date(), uuid: String = UUID().uuidString.lowercased()
    ) throws -> Data {
        let transaction = transaction(environment: environment, bundleID: bundleID, signedDate: signedDate)
        return try signer.notificationBody(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: uuid, transaction: transaction,
            renewal: SampleAppleRenewalInfo(
                originalTransactionId: transaction.originalTransactionId, environment: environment, signedDate: signedDate),
            signedDate: signedDate, appAppleId: IngestHarness.appAppleID)
    }

    /// A notification body whose outer JWS carries `payload` as is.
    static func body(outer payload: SampleAppleNotification, signer: AppleJWSSigner = signer) throws -> Data {
        try JSONEncoder().encode(["signedPayload": try signer.sign(payload)])
    }

    @Test(arguments: [true, false])
    func aValidNotificationIsStored(sandbox: Bool) async throws {
        try await IngestHarness.withIngest { client, db async throws in
            let uuid = UUID().uuidString.lowercased()
            let body = try Self.body(environment: sandbox ? "Sandbox" : "Production", uuid: uuid)
            let response = try await client.postApple(body, sandbox: sandbox)
            #expect(response.status == .ok, "\(response.text)")
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE source = 'apple' AND external_id = \(uuid) AND type = 'SUBSCRIBED' AND subtype = 'INITIAL_BUY' AND ordering_key IS NOT NULL") == 1)
        }
    }

    @Test func theTrailingSlashPathWorksToo() async throws {
        try await IngestHarness.withIngest { client, db async throws in
            let response = try await client.postApple(try Self.body(), path: "/v1/webhooks/appstore-notifications/")
            #expect(response.status == .ok)
            #expect(try await db.eventCount(source: "apple") == 1)
        }
    }

    @Test func aChainToAnotherRootIsUntrusted() async throws {
        let stranger = AppleJWSSigner(pki: try ApplePKI.generate(name: "Stranger"))
        try await expectRejected(try Self.body(signer: stranger), status: .unauthorized, code: "untrusted_chain")
    }

    @Test func aLeafWithoutTheMarkerOIDIsRefused() async throws {
        let pki = try ApplePKI.generate(name: "No Leaf OID", flaws: .init(leafWithoutMarker: true))
        try await expectRejected(try Self.body(signer: AppleJWSSigner(pki: pki)), status: .unauthorized, code: "missing_oid", trusting: pki)
    }

    @Test func anIntermediateWithoutTheMarkerOIDIsRefused() async throws {
        let pki = try ApplePKI.generate(name: "No Intermediate OID", flaws: .init(intermediateWithoutMarker: true))
        try await expectRejected(try Self.body(signer: AppleJWSSigner(pki: pki)), status: .unauthorized, code: "missing_oid", trusting: pki)
    }

    @Test func aLeafExpiredAtSignedDateIsRefused() async throws {
        let now = Date()
        let pki = try ApplePKI.generate(
            name: "Expired Leaf", flaws: .init(leafValidity: now.addingTimeInterval(-86_400 * 60)...now.addingTimeInterval(-86_400 * 30)))
        try await expectRejected(try Self.body(signer: AppleJWSSigner(pki: pki)), status: .unauthorized, code: "untrusted_chain", trusting: pki)
    }

    @Test func aPayloadSignedWhileTheLeafWasValidVerifiesLater() async throws {
        // Validation happens at signedDate: a leaf that expired since still proves an older payload.
        let now = Date()
        let pki = try ApplePKI.generate(
            name: "Since Expired", flaws: .init(leafValidity: now.addingTimeInterval(-86_400 * 60)...now.addingTimeInterval(-86_400 * 30)))
        try await IngestHarness.withIngest(environment: ["APPLE_ROOT_CERTIFICATES": try Self.rootFile(pki)]) { client, db async throws in
            let body = try Self.body(signer: AppleJWSSigner(pki: pki), signedDate: now.addingTimeInterval(-86_400 * 45))
            #expect(try await client.postApple(body).status == .ok)
        }
    }

    @Test(arguments: ["none", "HS256", "RS256", "ES384"])
    func anAlgorithmOtherThanES256IsRefused(alg: String) async throws {
        let payload = SampleAppleNotification(type: "TEST", bundleId: IngestHarness.bundleID)
        let jws = try Self.signer.sign(json: JSONEncoder().encode(payload), header: ["alg": alg, "x5c": try IngestHarness.pki.x5c])
        let unsigned = alg == "none" ? String(jws.prefix(upTo: jws.lastIndex(of: ".")!)) + "." : jws
        try await expectRejected(try JSONEncoder().encode(["signedPayload": unsigned]), status: .unauthorized, code: "unsupported_algorithm")
    }

    @Test func aBadSignatureIsRefused() async throws {
        let payload = SampleAppleNotification(type: "TEST", bundleId: IngestHarness.bundleID)
        let jws = try Self.signer.sign(payload)
        var parts = jws.split(separator: ".").map(String.init)
        // Another payload under the original signature.
        var other = payload
        other.notificationUUID = UUID().uuidString
        parts[1] = Base64URL.encode(try JSONEncoder().encode(other))
        try await expectRejected(try JSONEncoder().encode(["signedPayload": parts.joined(separator: ".")]), status: .unauthorized, code: "bad_signature")
    }

    @Test func aTamperedNestedTransactionIsRefused() async throws {
        let transaction = Self.transaction()
        let goodNested = try Self.signer.sign(transaction)
        var richer = transaction
        richer.productId = "pro.lifetime"
        var parts = goodNested.split(separator: ".").map(String.init)
        parts[1] = Base64URL.encode(try JSONEncoder().encode(richer))
        var payload = SampleAppleNotification(type: "ONE_TIME_CHARGE", bundleId: IngestHarness.bundleID, signedTransactionInfo: parts.joined(separator: "."))
        payload.data?.environment = "Sandbox"
        try await expectRejected(try Self.body(outer: payload), status: .unauthorized, code: "bad_signature")
    }

    @Test func anotherBundleIsRefused() async throws {
        try await expectRejected(try Self.body(bundleID: "com.someone.else"), status: .unauthorized, code: "wrong_bundle")
    }

    @Test func aSandboxPayloadOnTheProductionURLIsRefused() async throws {
        try await expectRejected(try Self.body(environment: "Sandbox"), sandbox: false, status: .unauthorized, code: "wrong_environment")
    }

    @Test func aProductionPayloadOnTheSandboxURLIsRefused() async throws {
        try await expectRejected(try Self.body(environment: "Production"), sandbox: true, status: .unauthorized, code: "wrong_environment")
    }

    @Test func anotherAppOnProductionIsRefused() async throws {
        var payload = SampleAppleNotification(type: "TEST", bundleId: IngestHarness.bundleID, environment: "Production", appAppleId: 42)
        payload.data?.appAppleId = 42
        try await expectRejected(try Self.body(outer: payload), sandbox: false, status: .unauthorized, code: "wrong_app")
    }

    @Test(arguments: [
        #"not json"#, #"{}"#, #"{"signedPayload": 5}"#, #"{"signedPayload":"a.b"}"#, #"{"signedPayload":"!!!.@@@.###"}"#,
        #"{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.e30"}"#, #"{"signedPayload":"bm90IGpzb24.e30.AAAA"}"#,
    ])
    func malformedBodiesAreBadRequests(body: String) async throws {
        try await expectRejected(Data(body.utf8), status: .badRequest, code: "malformed")
    }

    @Test func duplicatesAnswerOKWithoutASecondRow() async throws {
        try await IngestHarness.withIngest { client, db async throws in
            let body = try Self.body()
            #expect(try await client.postApple(body).status == .ok)
            #expect(try await client.postApple(body).status == .ok)
            #expect(try await db.eventCount(source: "apple") == 1)
        }
    }

    @Test func withoutBundleIDsTheEndpointIsUnavailable() async throws {
        try await IngestHarness.withIngest(environment: ["APPLE_ROOT_CERTIFICATES": "", "APPLE_BUNDLE_IDS": ""]) { client, db async throws in
            #expect(try await client.postApple(try Self.body()).status == .serviceUnavailable)
            #expect(try await db.eventCount() == 0)
        }
    }

    // MARK: Helpers

    static func rootFile(_ pki: ApplePKI) throws -> String { try TestCredentials.rootFile(pki) }

    private func expectRejected(
        _ body: Data, sandbox: Bool = true, status: HTTPResponse.Status, code: String, trusting pki: ApplePKI? = nil
    ) async throws {
        let overrides = try pki.map { ["APPLE_ROOT_CERTIFICATES": try Self.rootFile($0)] } ?? [:]
        try await IngestHarness.withIngest(environment: overrides) { client, db async throws in
            let response = try await client.postApple(body, sandbox: sandbox)
            #expect(response.status == status, "\(response.text)")
            #expect(response.errorCode == code, "\(response.text)")
            #expect(try await db.eventCount() == 0)
        }
    }
}
