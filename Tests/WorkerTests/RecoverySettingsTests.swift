// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Shared
import Testing
import TestSupport

@testable import Worker

/// How the worker reads the recovery variables, the App Store Server API token it signs, and how
/// it reads a provider's `Retry-After`.
struct RecoverySettingsTests {
    static func settings(_ values: [String: String]) throws -> RecoverySettings {
        try RecoverySettings(environment: EnvironmentValues(values))
    }

    static func keyFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("key-\(UUID().uuidString).p8").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func withoutCredentialsEveryProviderIsOff() throws {
        let settings = try Self.settings([:])
        #expect(settings.apple == nil)
        #expect(settings.stripe == nil)
        #expect(settings.interval == .seconds(900))
        #expect(try Self.settings(["RECOVERY_INTERVAL_SECONDS": "0"]).interval == nil)
    }

    @Test func anAppleKeyNeedsItsPartnersAndTheAppsAndTrustsApplesRootByDefault() throws {
        let file = try Self.keyFile(P256.Signing.PrivateKey().pemRepresentation)
        var values = ["APPLE_API_KEY_ID": "ABC123", "APPLE_API_ISSUER_ID": "issuer", "APPLE_API_PRIVATE_KEY_FILE": file]
        #expect(throws: ConfigurationError.self) { try Self.settings(["APPLE_API_KEY_ID": "ABC123"]) }
        #expect((#expect(throws: ConfigurationError.self) { try Self.settings(values) })?.variable == "APPLE_BUNDLE_IDS")
        values["APPLE_BUNDLE_IDS"] = "com.example.sluice"
        // Without APPLE_ROOT_CERTIFICATES, Apple's root is trusted; an unreadable file is refused.
        #expect(try Self.settings(values).apple != nil)
        values["APPLE_ROOT_CERTIFICATES"] = "/nonexistent/root.cer"
        #expect((#expect(throws: ConfigurationError.self) { try Self.settings(values) })?.variable == "APPLE_ROOT_CERTIFICATES")
        values["APPLE_ROOT_CERTIFICATES"] = TestCredentials.rootPath
        let apple = try #require(try Self.settings(values).apple)
        #expect(apple.baseURLs[.production] == "https://api.storekit.itunes.apple.com")
        #expect(apple.baseURLs[.sandbox] == "https://api.storekit-sandbox.itunes.apple.com")
    }

    @Test func anUnreadableKeyIsRefusedWithoutShowingIt() throws {
        let secret = "-----BEGIN PRIVATE KEY-----\nTOPSECRETMATERIAL\n-----END PRIVATE KEY-----"
        let error = #expect(throws: ConfigurationError.self) {
            try Self.settings([
                "APPLE_API_KEY_ID": "ABC123", "APPLE_API_ISSUER_ID": "issuer", "APPLE_API_PRIVATE_KEY_FILE": try Self.keyFile(secret),
            ])
        }
        #expect(error?.variable == "APPLE_API_PRIVATE_KEY_FILE")
        #expect(error?.description.contains("TOPSECRET") == false)
    }

    @Test(arguments: [("sk_live_x", PurchaseEnvironment.production), ("rk_live_x", .production), ("rk_test_x", .sandbox)])
    func aStripeKeyRecoversItsOwnMode(key: String, environment: PurchaseEnvironment) throws {
        #expect(try Self.settings(["STRIPE_API_KEY": key]).stripe?.environment == environment)
    }

    /// A provider's API key goes with every request: plain http:// only to this machine.
    @Test(arguments: [
        ("https://api.stripe.example", true), ("http://127.0.0.1:8111", true), ("http://localhost:1", true), ("http://[::1]:9", true),
        ("http://api.stripe.example", false), ("http://127.evil.example", false), ("http://10.0.0.7:80", false),
    ])
    func aBaseURLIsHTTPSOrLoopback(url: String, accepted: Bool) throws {
        let settings = { try Self.settings(["STRIPE_API_KEY": "sk_live_x", "STRIPE_API_BASE_URL": url]) }
        if accepted {
            #expect(try settings().stripe != nil)
        } else {
            #expect((#expect(throws: ConfigurationError.self) { try settings() })?.variable == "STRIPE_API_BASE_URL")
        }
    }

    @Test func aStripeKeyMustBeOne() throws {
        #expect((#expect(throws: ConfigurationError.self) { try Self.settings(["STRIPE_API_KEY": "pk_live_x"]) })?.variable == "STRIPE_API_KEY")
    }

    @Test func theTokenIsES256WithApplesClaimsAndIsReused() throws {
        let key = P256.Signing.PrivateKey()
        let tokens = AppleAPIToken(keyID: "KID1", issuerID: "ISS1", key: key)
        let now = Date()
        let token = try tokens.token(bundleID: "com.example.sluice", now: now)
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        let header = try JSONSerialization.jsonObject(with: Data(try #require(Base64URL.decode(parts[0])))) as? [String: Any]
        let claims = try JSONSerialization.jsonObject(with: Data(try #require(Base64URL.decode(parts[1])))) as? [String: Any]
        #expect(header?["alg"] as? String == "ES256")
        #expect(header?["kid"] as? String == "KID1")
        #expect(header?["typ"] as? String == "JWT")
        #expect(claims?["iss"] as? String == "ISS1")
        #expect(claims?["aud"] as? String == "appstoreconnect-v1")
        #expect(claims?["bid"] as? String == "com.example.sluice")
        let iat = try #require(claims?["iat"] as? Int)
        let exp = try #require(claims?["exp"] as? Int)
        #expect(exp - iat <= 3_600 && exp > Int(now.timeIntervalSince1970))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64URL.decode(parts[2])))
        #expect(key.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))
        #expect(try tokens.token(bundleID: "com.example.sluice", now: now.addingTimeInterval(600)) == token)
        #expect(try tokens.token(bundleID: "com.example.sluice", now: now.addingTimeInterval(16 * 60)) != token)
        #expect(try tokens.token(bundleID: "com.example.other", now: now) != token)
    }

    @Test(arguments: [("3", 3.0), ("1.5", 1.5), ("9999", 30.0)])
    func retryAfterInSeconds(value: String, seconds: Double) {
        #expect(ProviderCall.retryAfter(value, cap: .seconds(30)) == .milliseconds(Int64(seconds * 1000)))
    }

    @Test func applesRetryAfterIsAUnixTimeInMilliseconds() {
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        #expect(ProviderCall.retryAfter("1767225602500", now: now, cap: .seconds(30)) == .milliseconds(2_500))
        #expect(ProviderCall.retryAfter("1767225500000", now: now, cap: .seconds(30)) == .zero)
        #expect(ProviderCall.retryAfter("soon", now: now, cap: .seconds(30)) == nil)
    }

    /// Which streams `worker recover --source … [--environment …]` runs.
    @Test(arguments: [
        ("google_play:voided", RecoverCommand.Source.googlePlay, nil as String?, true),
        ("google_play:voided", .stripe, nil, false),
        ("stripe:production", .stripe, nil, true),
        ("stripe:production", .stripe, "sandbox", false),  // a live key recovers production only
        ("stripe:production", .stripe, "production", true),
        ("stripe:sandbox", .stripe, "sandbox", true),
        ("apple:sandbox:all", .apple, nil, true),
        ("apple:sandbox:all", .apple, "sandbox", true),
        ("apple:sandbox:all", .apple, "production", false),
        ("apple:production:failures", .apple, nil, false),
        ("apple:production:all", .googlePlay, nil, false),
    ])
    func theCommandRunsTheStreamsOfItsSource(_ name: String, _ source: RecoverCommand.Source, _ environment: String?, _ expected: Bool) {
        #expect(RecoverCommand.recovers(name, source: source, environment: environment) == expected)
    }

    /// `--environment` is refused where it would be ignored without a word: Google Play's voided
    /// purchases have no environments.
    @Test(arguments: [
        ("sandbox" as String?, RecoverCommand.Source.apple, true),
        ("production", .stripe, true),
        (nil, .googlePlay, true),
        ("sandbox", .googlePlay, false),
        ("staging", .apple, false),
    ])
    func theEnvironmentIsTakenWhereItApplies(_ environment: String?, _ source: RecoverCommand.Source, _ accepted: Bool) {
        #expect((RecoverCommand.environmentProblem(environment, source: source) == nil) == accepted)
    }
}
