// SPDX-License-Identifier: Apache-2.0
import Foundation

/// What ingest checks a Google Play push against (docs/CONTRACT.md, "Configuration"): off until
/// `GOOGLE_PLAY_PACKAGE_NAMES` is set, and then the push subscription's audience and service
/// account are required, so that no push is ever accepted unauthenticated.
public struct GooglePushSettings: Sendable {
    /// `GOOGLE_PLAY_PACKAGE_NAMES`: the apps whose notifications are accepted.
    public var packageNames: Set<String>
    /// `GOOGLE_PUSH_AUDIENCE`: the push subscription's `--push-auth-token-audience`.
    public var audience: String
    /// `GOOGLE_PUSH_SERVICE_ACCOUNT`: the push subscription's `--push-auth-service-account`.
    public var serviceAccount: String
    /// `GOOGLE_OIDC_CERTS_URL`: Google's signing keys (tests and proxies set another).
    public var certsURL: String

    public static let help = """
          GOOGLE_PLAY_PACKAGE_NAMES comma-separated Android package names whose Play notifications are accepted (none: /v1/webhooks/google-play answers 503)
          GOOGLE_PUSH_AUDIENCE      the Pub/Sub push subscription's token audience (required with GOOGLE_PLAY_PACKAGE_NAMES)
          GOOGLE_PUSH_SERVICE_ACCOUNT the push subscription's service account email; tokens of any other account are 401 (required with GOOGLE_PLAY_PACKAGE_NAMES)
          GOOGLE_OIDC_CERTS_URL     Google's OIDC signing keys (default https://www.googleapis.com/oauth2/v3/certs)
        """

    /// `nil` when `GOOGLE_PLAY_PACKAGE_NAMES` is not set.
    public static func configured(by environment: EnvironmentValues) throws -> GooglePushSettings? {
        let packageNames = Set(environment.list("GOOGLE_PLAY_PACKAGE_NAMES"))
        guard !packageNames.isEmpty else {
            for variable in ["GOOGLE_PUSH_AUDIENCE", "GOOGLE_PUSH_SERVICE_ACCOUNT"] where environment.string(variable) != nil {
                throw ConfigurationError(variable: "GOOGLE_PLAY_PACKAGE_NAMES", reason: "is required when \(variable) is set")
            }
            return nil
        }
        let audience = try environment.required("GOOGLE_PUSH_AUDIENCE")
        let serviceAccount = try environment.required("GOOGLE_PUSH_SERVICE_ACCOUNT")
        guard serviceAccount.contains("@") else {
            throw ConfigurationError(variable: "GOOGLE_PUSH_SERVICE_ACCOUNT", reason: "must be a service account email")
        }
        return GooglePushSettings(
            packageNames: packageNames, audience: audience, serviceAccount: serviceAccount,
            certsURL: try ProviderBaseURL.read(environment, "GOOGLE_OIDC_CERTS_URL", default: "https://www.googleapis.com/oauth2/v3/certs"))
    }

    /// The verifier these settings make, its keys fetched from ``certsURL``.
    public func verifier() -> PlayPushVerifier {
        PlayPushVerifier(
            authentication: GooglePushAuthentication(audience: audience, serviceAccount: serviceAccount, keys: GoogleSigningKeys(url: certsURL)),
            packageNames: packageNames)
    }
}
