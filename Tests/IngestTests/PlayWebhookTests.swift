// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared
import Testing
import TestSupport

/// `POST /v1/webhooks/google-play` against a local Google: its published keys and the OIDC tokens
/// Pub/Sub signs with them. Every refused push is `401` (or `503` while Google's keys cannot be
/// had) and stores nothing.
@Suite(.timeLimit(.minutes(3)))
struct PlayWebhookTests {
    static let audience = "https://sluice.example.com/v1/webhooks/google-play"
    static let pushAccount = "play-push@sluice-test.iam.gserviceaccount.com"
    static let path = "/v1/webhooks/google-play"

    /// Runs `body` with ingest configured for Play, its keys fetched from `google`.
    static func withPlayIngest(
        _ google: GoogleOIDCStandIn, _ body: @Sendable @escaping (any TestClientProtocol, TestDatabase) async throws -> Void
    ) async throws {
        let router = Router(context: BasicRequestContext.self)
        google.addRoutes(to: router)
        try await LocalHTTPServer.run(router) { base in
            try await IngestHarness.withIngest(environment: [
                "GOOGLE_PLAY_PACKAGE_NAMES": SamplePlayNotifications.packageName, "GOOGLE_PUSH_AUDIENCE": audience,
                "GOOGLE_PUSH_SERVICE_ACCOUNT": pushAccount, "GOOGLE_OIDC_CERTS_URL": base + GoogleOIDCStandIn.certsPath,
            ], body)
        }
    }

    static func post(_ client: any TestClientProtocol, _ body: Data, token: String?) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer " + token }
        return try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(data: body))
    }

    static func goodToken(_ google: GoogleOIDCStandIn) throws -> String {
        try google.idToken(audience: audience, email: pushAccount)
    }

    @Test func anAuthenticatedPushIsStoredOnceUnderItsMessageID() async throws {
        let google = try GoogleOIDCStandIn()
        try await Self.withPlayIngest(google) { client, db in
            let body = try SamplePlayNotifications.push(SamplePlayNotifications.subscription(4, token: "token-a"), messageID: "1001")
            for _ in 0..<3 {
                let response = try await Self.post(client, body, token: try Self.goodToken(google))
                #expect(response.status == .ok)
            }
            var rows: [(String, String, String?, String)] = []
            for try await row in try await db.client.query(
                "SELECT external_id, type, ordering_key, convert_from(payload, 'UTF8') FROM events WHERE source = 'play'", logger: TestDatabase.logger
            ).decode((String, String, String?, String).self) {
                rows.append(row)
            }
            #expect(rows.count == 1)
            #expect(rows.first?.0 == "1001")
            #expect(rows.first?.1 == "SUBSCRIPTION_PURCHASED")
            #expect(rows.first?.2 == "token-a")
            // Stored as Pub/Sub's message, without what was not verified (`attributes`).
            #expect(rows.first?.3.contains(#""messageId":"1001""#) == true)
            #expect(rows.first?.3.contains("attributes") == false)
            #expect(google.fetches == 1)
        }
    }

    @Test func aTestNotificationIsRecorded() async throws {
        let google = try GoogleOIDCStandIn()
        try await Self.withPlayIngest(google) { client, db in
            let response = try await Self.post(client, try SamplePlayNotifications.push(SamplePlayNotifications.test()), token: try Self.goodToken(google))
            #expect(response.status == .ok)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE source = 'play' AND type = 'TEST_NOTIFICATION'") == 1 as Int64)
        }
    }

    /// Each push Google did not authenticate for this subscription, with the code it is refused with.
    @Test(arguments: [
        "none", "garbage", "alg-none", "forged", "expired", "future", "audience", "issuer", "email", "unverified", "unknown-kid",
    ])
    func anUnauthenticatedPushIsRefusedAndNothingIsStored(attack: String) async throws {
        let google = try GoogleOIDCStandIn()
        try await Self.withPlayIngest(google) { client, db in
            let stranger = try GoogleOIDCStandIn.newKey()
            let token: String?
            let expected: String
            switch attack {
            case "none": (token, expected) = (nil, "missing_token")
            case "garbage": (token, expected) = ("not-a-jwt", "bad_token")
            case "alg-none":
                let good = try Self.goodToken(google).split(separator: ".")
                let header = Base64URL.encode(Data(#"{"alg":"none","kid":"\#(google.currentKey.kid)"}"#.utf8))
                (token, expected) = (header + "." + good[1] + ".", "unsupported_algorithm")
            case "forged":
                // Google's kid, signed with another key.
                let forged = GoogleOIDCStandIn.SigningKey(kid: google.currentKey.kid, key: stranger.key)
                (token, expected) = (try google.idToken(audience: Self.audience, email: Self.pushAccount, key: forged), "bad_signature")
            case "expired":
                (token, expected) = (try google.idToken(audience: Self.audience, email: Self.pushAccount, issuedAt: Date().addingTimeInterval(-7_200)), "expired")
            case "future":
                (token, expected) = (try google.idToken(audience: Self.audience, email: Self.pushAccount, issuedAt: Date().addingTimeInterval(3_600)), "expired")
            case "audience":
                (token, expected) = (try google.idToken(audience: "https://attacker.example.com/push", email: Self.pushAccount), "wrong_audience")
            case "issuer":
                (token, expected) = (try google.idToken(audience: Self.audience, email: Self.pushAccount, issuer: "https://attacker.example.com"), "wrong_issuer")
            case "email":
                (token, expected) = (try google.idToken(audience: Self.audience, email: "someone@attacker.iam.gserviceaccount.com"), "wrong_account")
            case "unverified":
                (token, expected) = (try google.idToken(audience: Self.audience, email: Self.pushAccount, emailVerified: false), "wrong_account")
            default:
                (token, expected) = (try google.idToken(audience: Self.audience, email: Self.pushAccount, key: stranger), "unknown_key")
            }
            let body = try SamplePlayNotifications.push(SamplePlayNotifications.subscription(4, token: "token-\(attack)"))
            let response = try await Self.post(client, body, token: token)
            #expect(response.status == .unauthorized, "\(attack)")
            #expect(response.errorCode == expected, "\(attack)")
            #expect(try await db.eventCount() == 0)
        }
    }

    @Test func aPushForAnotherAppIsRefused() async throws {
        let google = try GoogleOIDCStandIn()
        try await Self.withPlayIngest(google) { client, db in
            let body = try SamplePlayNotifications.push(SamplePlayNotifications.subscription(4, token: "t", packageName: "com.attacker.app"))
            let response = try await Self.post(client, body, token: try Self.goodToken(google))
            #expect(response.status == .unauthorized)
            #expect(response.errorCode == "wrong_package")
            #expect(try await db.eventCount() == 0)
        }
    }

    @Test func aKeyGoogleRotatedInIsAcceptedAfterOneFetch() async throws {
        let google = try GoogleOIDCStandIn()
        try await Self.withPlayIngest(google) { client, db in
            let first = try SamplePlayNotifications.push(SamplePlayNotifications.subscription(4, token: "t1"))
            #expect(try await Self.post(client, first, token: try Self.goodToken(google)).status == .ok)
            #expect(google.fetches == 1)
            try google.rotate()
            // Past the refetch interval that keeps forged kids from hammering Google.
            try await Task.sleep(for: .milliseconds(1_100))
            // The set is still fresh, but lacks the new kid: one fetch, then it is known.
            let second = try SamplePlayNotifications.push(SamplePlayNotifications.subscription(2, token: "t1"))
            #expect(try await Self.post(client, second, token: try Self.goodToken(google)).status == .ok)
            #expect(google.fetches == 2)
            let third = try SamplePlayNotifications.push(SamplePlayNotifications.subscription(2, token: "t2"))
            #expect(try await Self.post(client, third, token: try Self.goodToken(google)).status == .ok)
            #expect(google.fetches == 2)
            #expect(try await db.eventCount(source: "play") == 3)
        }
    }

    @Test func withoutGooglesKeysAPushIsAskedAgainLater() async throws {
        let google = try GoogleOIDCStandIn()
        google.setFailing(true)
        try await Self.withPlayIngest(google) { client, db in
            let body = try SamplePlayNotifications.push(SamplePlayNotifications.subscription(4, token: "t"))
            let response = try await Self.post(client, body, token: try Self.goodToken(google))
            #expect(response.status == .serviceUnavailable)
            #expect(response.errorCode == "keys_unavailable")
            #expect(try await db.eventCount() == 0)
        }
    }

    @Test func withoutPlaySettingsTheEndpointIsUnavailable() async throws {
        try await IngestHarness.withIngest { client, db in
            let google = try GoogleOIDCStandIn()
            let body = try SamplePlayNotifications.push(SamplePlayNotifications.test())
            let response = try await Self.post(client, body, token: try Self.goodToken(google))
            #expect(response.status == .serviceUnavailable)
            #expect(try await db.eventCount() == 0)
        }
    }

    @Test func aSettingWithoutItsPartnersIsAConfigurationError() throws {
        #expect(throws: ConfigurationError.self) {
            try GooglePushSettings.configured(by: EnvironmentValues(["GOOGLE_PLAY_PACKAGE_NAMES": "com.example.app"]))
        }
        #expect(throws: ConfigurationError.self) {
            try GooglePushSettings.configured(by: EnvironmentValues(["GOOGLE_PUSH_AUDIENCE": "x"]))
        }
        #expect(try GooglePushSettings.configured(by: EnvironmentValues([:])) == nil)
    }
}
