// SPDX-License-Identifier: Apache-2.0
import Foundation
public import Logging

/// The Play Developer API credentials (docs/CONTRACT.md, "Configuration"): the worker fetches
/// purchase states and acknowledges with them. Off until the service account's key file is set.
public struct GooglePlayAPISettings: Sendable {
    public var account: GoogleServiceAccount
    /// `GOOGLE_PLAY_PACKAGE_NAMES`: the apps whose purchases are asked about (voided purchases are
    /// listed per app; a token is looked up in each).
    public var packageNames: [String]
    /// `GOOGLE_PLAY_API_BASE_URL`: the Android Publisher host (tests and proxies set another).
    public var baseURL: String

    public static let help = """
          GOOGLE_PLAY_SERVICE_ACCOUNT_FILE a Google service account's JSON key file with access to the Play Developer API (none: Play pushes wait, and are dead-lettered, until it is set; Play recovery off)
          GOOGLE_PLAY_PACKAGE_NAMES the apps whose voided purchases are recovered and subscriptions reconciled (required with the key file)
          GOOGLE_PLAY_API_BASE_URL  the Android Publisher host (default https://androidpublisher.googleapis.com)
        """

    /// `nil` when `GOOGLE_PLAY_SERVICE_ACCOUNT_FILE` is not set.
    public static func configured(by environment: EnvironmentValues) throws -> GooglePlayAPISettings? {
        guard let path = environment.string("GOOGLE_PLAY_SERVICE_ACCOUNT_FILE") else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(variable: "GOOGLE_PLAY_SERVICE_ACCOUNT_FILE", reason: "cannot be read")
        }
        let packageNames = environment.list("GOOGLE_PLAY_PACKAGE_NAMES")
        guard !packageNames.isEmpty else {
            throw ConfigurationError(variable: "GOOGLE_PLAY_PACKAGE_NAMES", reason: "is required with GOOGLE_PLAY_SERVICE_ACCOUNT_FILE")
        }
        return GooglePlayAPISettings(
            account: try GoogleServiceAccount(keyFile: data, variable: "GOOGLE_PLAY_SERVICE_ACCOUNT_FILE"), packageNames: packageNames,
            baseURL: try ProviderBaseURL.read(environment, "GOOGLE_PLAY_API_BASE_URL", default: "https://androidpublisher.googleapis.com"))
    }

    /// The client these credentials make, its calls made through `call`.
    public func api(call: ProviderCall, logger: Logger) -> PlayDeveloperAPI {
        PlayDeveloperAPI(call: call, account: account, baseURL: baseURL, logger: logger)
    }
}
