// SPDX-License-Identifier: Apache-2.0
import NIOCore
import NIOPosix
import PostgresNIO

/// Why the database could not be used, as a few words an operator reads in a log line, a `503`
/// or a command's error: "connection refused", "no answer within 5 s", the server's own message
/// ("password authentication failed for user …"). The error's type goes in a log field beside it
/// (``typeName(of:)``), never in the sentence.
public enum DatabaseProblem {
    /// - Parameter timeout: the limit a ``TimeoutError`` ran into, when known.
    public static func sentence(_ error: any Error, timeout: Duration?) -> String {
        switch error {
        case is TimeoutError:
            return timeout.map { "no answer within \(seconds($0))" } ?? "no answer in time"
        case let error as PSQLError:
            if let message = error.serverInfo?[.message] { return message }
            if let underlying = error.underlying { return sentence(underlying, timeout: timeout) }
            switch error.code {
            case .serverClosedConnection: return "the server closed the connection"
            case .sslUnsupported: return "the server does not offer TLS, which sslmode requires"
            case .authMechanismRequiresPassword: return "the server asks for a password and none was given"
            case .poolClosed: return "the connection pool is shut down"
            default: return "the connection failed (\(error.code))"
            }
        case let error as IOError:
            return socketSentence(errno: error.errnoCode)
        case let error as NIOConnectionError:
            if let failure = error.connectionErrors.first?.error { return sentence(failure, timeout: timeout) }
            if let resolution = error.dnsAAAAError ?? error.dnsAError { return "the host name does not resolve (\(resolution))" }
            return "no connection could be made"
        case is ChannelError:
            return "the connection failed (\(error))"
        case is CancellationError:
            return "the wait was cancelled"
        default:
            // The pool's own error (`ConnectionPoolError`), after its connection attempts all failed.
            if "\(type(of: error))" == "ConnectionPoolError" { return "no connection could be made" }
            return "\(error)"
        }
    }

    /// Whether `error` says the database could not be used at all (no connection, no answer in
    /// time), as opposed to a statement it refused: such a request is answered `503`, to be retried.
    public static func isUnavailability(_ error: any Error) -> Bool {
        switch error {
        case is TimeoutError, is IOError, is NIOConnectionError: return true
        case let error as PSQLError:
            return [.connectionError, .serverClosedConnection, .poolClosed, .uncleanShutdown, .sslUnsupported, .failedToAddSSLHandler]
                .contains(error.code) || error.underlying.map(isUnavailability) == true
        default: return "\(type(of: error))" == "ConnectionPoolError"
        }
    }

    /// The error's type, for a log field (`error_type`).
    public static func typeName(of error: any Error) -> String {
        "\(type(of: error))"
    }

    static func socketSentence(errno code: Int32) -> String {
        switch code {
        case ECONNREFUSED: "connection refused"
        case ETIMEDOUT: "the connection timed out"
        case EHOSTUNREACH: "no route to the host"
        case ENETUNREACH: "the network is unreachable"
        case ECONNRESET: "the connection was reset"
        default: String(cString: strerror(code)).lowercased()
        }
    }

    /// `5 s`, `0.5 s`.
    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if attoseconds == 0 { return "\(seconds) s" }
        return "\(Double(seconds) + Double(attoseconds) / 1e18) s"
    }
}
