// SPDX-License-Identifier: Apache-2.0
public import Crypto
import Foundation

/// The App Store Server API credentials both processes read (docs/CONTRACT.md, "Configuration"):
/// the worker recovers and reconciles with them, ingest reads StoreKit 1 receipts. Off until the
/// key is set. The key is held here and in ``AppleAPIToken`` only; never logged or printed.
public struct AppStoreAPISettings: Sendable {
    public var keyID: String
    public var issuerID: String
    public var privateKey: P256.Signing.PrivateKey
    /// `APPLE_BUNDLE_IDS`: one token (its `bid`) per app.
    public var bundleIDs: [String]
    public var baseURLs: [PurchaseEnvironment: String]

    /// The variables that turn it on, as the `503` of a feature that needs them names them.
    public static let variables = "APPLE_API_KEY_ID, APPLE_API_ISSUER_ID and APPLE_API_PRIVATE_KEY_FILE"

    /// `nil` when none of the key's variables is set.
    public static func configured(by environment: EnvironmentValues) throws -> AppStoreAPISettings? {
        let keyID = environment.string("APPLE_API_KEY_ID")
        let issuerID = environment.string("APPLE_API_ISSUER_ID")
        let keyFile = environment.string("APPLE_API_PRIVATE_KEY_FILE")
        guard keyID != nil || issuerID != nil || keyFile != nil else { return nil }
        guard let keyID, let issuerID, let keyFile else {
            throw ConfigurationError(variable: "APPLE_API_KEY_ID", reason: "\(variables) go together")
        }
        let privateKey: P256.Signing.PrivateKey
        do {
            privateKey = try P256.Signing.PrivateKey(pemRepresentation: try String(contentsOfFile: keyFile, encoding: .utf8))
        } catch {
            // The file's content never reaches the message: it is a private key.
            throw ConfigurationError(variable: "APPLE_API_PRIVATE_KEY_FILE", reason: "is not a readable PKCS#8 PEM P-256 key (.p8)")
        }
        let bundleIDs = environment.list("APPLE_BUNDLE_IDS")
        guard !bundleIDs.isEmpty else {
            throw ConfigurationError(variable: "APPLE_BUNDLE_IDS", reason: "is required with an App Store Server API key")
        }
        return AppStoreAPISettings(
            keyID: keyID, issuerID: issuerID, privateKey: privateKey, bundleIDs: bundleIDs,
            baseURLs: [
                .production: try ProviderBaseURL.read(environment, "APPLE_API_BASE_URL", default: "https://api.storekit.itunes.apple.com"),
                .sandbox: try ProviderBaseURL.read(environment, "APPLE_API_SANDBOX_BASE_URL", default: "https://api.storekit-sandbox.itunes.apple.com"),
            ])
    }

    /// The client these credentials make, its calls made through `call`.
    public func api(call: ProviderCall) -> AppStoreServerAPI {
        AppStoreServerAPI(call: call, token: AppleAPIToken(keyID: keyID, issuerID: issuerID, key: privateKey), baseURLs: baseURLs)
    }
}
