// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A provider API's base URL setting (`STRIPE_API_BASE_URL`, `APPLE_API_BASE_URL`, …): absolute
/// http(s), and `https://` unless it is this machine (a local stand-in), since the API key travels
/// with every request.
public enum ProviderBaseURL {
    /// - Returns: the URL without a trailing `/`.
    /// - Throws: ``ConfigurationError`` naming `name`.
    public static func read(_ environment: EnvironmentValues, _ name: String, default value: String) throws -> String {
        let url = environment.string(name) ?? value
        guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
            throw ConfigurationError(variable: name, reason: "must be an absolute http(s) URL")
        }
        if parsed.scheme == "http", !LoopbackHost.contains(parsed.host ?? "") {
            throw ConfigurationError(variable: name, reason: "must be https:// (http:// only to localhost, for a local stand-in)")
        }
        return url.hasSuffix("/") ? String(url.dropLast()) : url
    }
}
