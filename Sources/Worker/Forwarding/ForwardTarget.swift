// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// A `FORWARD_TARGETS` URL: absolute `http` or `https`, with a host.
struct ForwardTarget: Sendable, Hashable {
    let url: String

    /// - Throws: ``ConfigurationError`` naming `FORWARD_TARGETS` (never the URL, which may hold a token).
    init(_ text: String) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else {
            throw ConfigurationError(variable: "FORWARD_TARGETS", reason: "must list absolute http:// or https:// URLs")
        }
        url = text
    }

    /// How logs and metrics name a target: scheme, host, port and path, without credentials or query,
    /// which may hold secrets.
    static func label(for url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else {
            return "invalid"
        }
        let port = components.port.map { ":\($0)" } ?? ""
        return "\(scheme)://\(host)\(port)\(components.path)"
    }
}
