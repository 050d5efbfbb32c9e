// SPDX-License-Identifier: Apache-2.0
import Foundation

/// How logs, metrics and operator output name a URL: scheme, host, port and path, without
/// credentials or query, which may hold secrets.
public enum URLLabel {
    public static func of(_ url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else {
            return "invalid"
        }
        let port = components.port.map { ":\($0)" } ?? ""
        return "\(scheme)://\(host)\(port)\(components.path)"
    }
}
