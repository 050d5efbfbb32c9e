// SPDX-License-Identifier: Apache-2.0
public import DevSupport
import Foundation
import X509
import SwiftASN1

/// The secrets, keys and test PKI that the HTTP tests configure `ingest` with.
public enum TestCredentials {
    public static let stripeSecret = "whsec_test_primary_0123456789abcdef"
    public static let rotatedStripeSecret = "whsec_test_rotated_fedcba9876543210"
    public static let apiKey = "sk_sluice_test_key_0123456789abcdef0123"
    /// An app key: the StoreKit sync only.
    public static let clientAPIKey = "ck_sluice_test_app_key_0123456789abcdef"
    public static let bundleID = "com.example.sluice"
    public static let appAppleID: Int64 = 1_234_567_890

    /// The test PKI every Apple test trusts, made once per test process.
    public static let pki: ApplePKI = try! ApplePKI.generate(name: "Sluice Tests")
    public static let signer = AppleJWSSigner(pki: pki)

    /// `pki`'s root as a PEM file, as `APPLE_ROOT_CERTIFICATES` names it.
    public static let rootPath: String = try! rootFile(pki)

    /// Writes a PKI's root to a temporary PEM file and returns its path.
    public static func rootFile(_ pki: ApplePKI) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-test-root-\(UUID().uuidString).pem")
        try pki.root.serializeAsPEM().pemString.write(to: path, atomically: true, encoding: .utf8)
        return path.path
    }

    /// The environment `ingest` runs with in tests.
    public static func ingestEnvironment(databaseURL: String, overrides: [String: String] = [:]) -> [String: String] {
        var values = [
            "DATABASE_URL": databaseURL,
            "INGEST_HOST": "127.0.0.1",
            "INGEST_PORT": "0",
            "INGEST_ADMIN_PORT": "0",
            "STRIPE_WEBHOOK_SECRETS": stripeSecret,
            "APPLE_ROOT_CERTIFICATES": rootPath,
            "APPLE_BUNDLE_IDS": bundleID,
            "APPLE_APP_APPLE_ID": "\(appAppleID)",
            "API_KEYS": apiKey,
            "CLIENT_API_KEYS": clientAPIKey,
            "LOG_LEVEL": "critical",
            // Longer than the product's 5 s, as `TestDatabase.serverURL()`'s: with a hundred suites
            // started at once on two cores, a request's first query on a fresh database was seen
            // answered 503 after 5 s (CI, stop 60). Tests of the timeout itself set their own.
            "DATABASE_TIMEOUT_SECONDS": "30",
        ]
        values.merge(overrides) { $1 }
        return values
    }
}
