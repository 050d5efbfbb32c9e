// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

/// One short sentence for a failed HTTP exchange: "connection refused by 127.0.0.1:8000", "timed
/// out after 10 s", "answered 503" (issue 38). NIO's own text for a refused connection read
/// `connection reset (error set): Connection refused) (errno: 111)`: unbalanced, and "reset".
public enum HTTPFailureText {
    /// - Parameter peer: `host:port` only, never the path, query or user part (``peer(of:)``).
    public static func describe(_ error: any Error, peer: String, timeout: Duration) -> String {
        switch error {
        case let error as HTTPClientError:
            if [.connectTimeout, .deadlineExceeded, .readTimeout, .writeTimeout, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout]
                .contains(error) { return "timed out after \(DatabaseProblem.seconds(timeout))" }
            if error == .remoteConnectionClosed { return "connection closed by \(peer) before it answered" }
            return "request to \(peer) failed: \(error.shortDescription.lowercased())"
        case let error as NIOConnectionError:
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "\(error.host) could not be resolved" }
            if let last = error.connectionErrors.last?.error { return describe(last, peer: peer, timeout: timeout) }
            return "could not connect to \(peer)"
        case let error as SocketAddressError.UnknownHost:
            return "\(error.host) could not be resolved"
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return "connection refused by \(peer)"
            case ECONNRESET, EPIPE: return "connection reset by \(peer)"
            case ETIMEDOUT: return "timed out connecting to \(peer)"
            case EHOSTUNREACH, ENETUNREACH: return "\(peer) is unreachable"
            default: return "connection to \(peer) failed: \(String(cString: strerror(error.errnoCode)).lowercased())"
            }
        case let error as ChannelError:
            switch error {
            case .connectTimeout: return "timed out after \(DatabaseProblem.seconds(timeout))"
            case .eof, .ioOnClosedChannel, .alreadyClosed, .inputClosed, .outputClosed: return "connection closed by \(peer) before it answered"
            default: return "connection to \(peer) failed: \(error)"
            }
        default:
            return String(describing: error)
        }
    }

    /// A response outside 2xx.
    public static func answered(_ status: Int) -> String { "answered \(status)" }

    /// `host:port` of an http(s) URL, the port defaulted by its scheme; "the target" when it has no host.
    public static func peer(of url: String) -> String {
        guard let components = URLComponents(string: url), let host = components.host else { return "the target" }
        let port = components.port ?? (components.scheme?.lowercased() == "https" ? 443 : 80)
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
