// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Shared
import Testing
import TestSupport
import HTTPTypes
import HummingbirdTesting
import PostgresNIO

/// Secrets stay out of logs, and a JWS header's URLs are never fetched.
@Suite(.timeLimit(.minutes(3)))
struct SecurityTests {
    /// `ingest` and `worker` run as processes at `LOG_LEVEL=trace`, in both log formats, through
    /// stored, duplicate, forged, unauthorised and forwarded traffic; no configured secret and no
    /// presented key appears anywhere in what they wrote.
    @Test(arguments: ["json", "text"])
    func secretsNeverReachTheLogs(format: String) async throws {
        let databasePassword = "db-password-never-logged-7f3a"
        let forwardSecret = "whsec_" + Data("forward-secret-never-logged-1234".utf8).base64EncodedString()
        let targetPassword = "target-password-never-logged-9c2e"
        let wrongKey = "sk_presented_wrong_key_never_logged"
        try await TestDatabase.with { db in
            var url = db.url
            url.password = databasePassword
            let common = ["DATABASE_URL": url.urlString, "LOG_LEVEL": "trace", "LOG_FORMAT": format]
            let ingest = try await ServiceProcess("ingest", environment: TestCredentials.ingestEnvironment(
                databaseURL: url.urlString,
                overrides: common.merging(["STRIPE_WEBHOOK_SECRETS": "\(TestCredentials.stripeSecret),\(TestCredentials.rotatedStripeSecret)"]) { $1 }))
            let worker = try await ServiceProcess("worker", arguments: ["run"], environment: common.merging([
                "FORWARD_TARGETS": "http://sluice:\(targetPassword)@127.0.0.1:9/hook?token=\(targetPassword)",
                "FORWARD_SECRET": forwardSecret, "RETRY_BASE_SECONDS": "0.1", "MAX_ATTEMPTS": "2",
            ]) { $1 })

            let event = try Array(StripeWebhookTests.event())
            for secret in [TestCredentials.stripeSecret, TestCredentials.rotatedStripeSecret, "whsec_forged"] {
                let signed = RawRequest.post("/v1/webhooks/stripe", headers: [
                    ("Content-Type", "application/json"), ("Stripe-Signature", StripeSigner.header(body: event, secret: secret)),
                ], body: event)
                _ = try await RawHTTPConnection.exchange(port: ingest.port, signed)
            }
            let apple = try AppleWebhookTests.body()
            let appleRequest = RawRequest.post(
                "/v1/webhooks/appstore-notifications?sandbox=true", headers: [("Content-Type", "application/json")], body: Array(apple))
            #expect(try await RawHTTPConnection.exchange(port: ingest.port, appleRequest)?.status == 200)
            for key in [wrongKey, TestCredentials.apiKey] {
                let read = Array("GET /v1/entitlements?user_id=u HTTP/1.1\r\nHost: s\r\nAuthorization: Bearer \(key)\r\n\r\n".utf8)
                _ = try await RawHTTPConnection.exchange(port: ingest.port, read)
            }
            // Wait until the worker applied both events and tried (and failed) the forward: the
            // forward comes of the Apple notification, and may be tried before the Stripe event
            // is applied (a full suite's load showed it), so both are waited for.
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                let forwardTried = try await db.scalar("SELECT count(*) FROM deliveries WHERE attempts > 0") > 0
                if forwardTried, try await db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 2 { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 2)
            ingest.stop()
            worker.stop()

            let logs = ingest.log() + worker.log()
            #expect(logs.split(separator: "\n").count > 20, "trace logging wrote too little to prove anything")
            #expect(logs.contains("ep_1: connection refused by 127.0.0.1:"), "the failed forward is logged (by its endpoint's name), in one sentence")
            for secret in [
                TestCredentials.stripeSecret, TestCredentials.rotatedStripeSecret, TestCredentials.apiKey, wrongKey,
                databasePassword, forwardSecret, String(forwardSecret.dropFirst("whsec_".count)), targetPassword,
            ] {
                #expect(!logs.contains(secret), "a secret reached the logs")
            }
        }
    }

    /// `x5u` and `jku` point at a listener the test holds; ingest must refuse the JWS that has no
    /// `x5c`, accept the one whose `x5c` verifies, and never connect to the listener.
    @Test func aURLInAJWSHeaderIsNeverFollowed() async throws {
        let listener = try LoopbackListener()
        let url = "http://127.0.0.1:\(listener.port)/chain.pem"
        try await IngestHarness.withIngest { client, db async throws in
            let payload = try JSONEncoder().encode(SampleAppleNotification(type: "TEST", bundleId: TestCredentials.bundleID))
            let onlyURLs = try TestCredentials.signer.sign(json: payload, header: ["alg": "ES256", "x5u": url, "jku": url])
            let refused = try await client.postApple(try JSONEncoder().encode(["signedPayload": onlyURLs]))
            #expect(refused.status == .unauthorized)
            #expect(refused.errorCode == "untrusted_chain")

            let both = try TestCredentials.signer.sign(
                json: payload, header: ["alg": "ES256", "x5c": try TestCredentials.pki.x5c, "x5u": url, "jku": url])
            #expect(try await client.postApple(try JSONEncoder().encode(["signedPayload": both])).status == .ok)
            #expect(try await db.eventCount(source: "apple") == 1)
        }
        #expect(!listener.hasPendingConnection, "ingest connected to the URL in the JWS header")
    }
}
