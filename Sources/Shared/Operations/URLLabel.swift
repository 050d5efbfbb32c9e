// SPDX-License-Identifier: Apache-2.0
import Foundation

/// How logs, metrics and dead-letter output name a URL: scheme, host and port, with `/…` standing
/// for any path (the endpoints commands show an endpoint its whole URL: the operator set it).
/// Credentials, path and query are left out: a Slack-style webhook URL carries its
/// token in the path, others in the query or the user part.
public enum URLLabel {
    public static func of(_ url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else {
            return "invalid"
        }
        let port = components.port.map { ":\($0)" } ?? ""
        let path = components.path.isEmpty || components.path == "/" ? "" : "/…"
        return "\(scheme)://\(host)\(port)\(path)"
    }
}
