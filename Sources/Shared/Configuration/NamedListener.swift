// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
public import ServiceLifecycle

/// A listening server run as a service, whose failure to listen (a port in use, an address not
/// on this host, a name that does not resolve) becomes a ``ConfigurationError`` naming the
/// variable that set it: the process then says in one line which address it could not take and
/// exits non-zero at once, instead of serving nothing (issue 38).
///
/// Binding first and starting the server after would race another process for the port; this
/// reads the server's own bind error instead.
public struct NamedListener: Service, CustomStringConvertible {
    /// What the listener's address was set by.
    public struct Address: Sendable {
        public var host: String
        public var port: Int
        /// The variable of the host, when one sets it.
        public var hostVariable: String?
        public var portVariable: String

        public init(host: String, port: Int, hostVariable: String?, portVariable: String) {
            self.host = host
            self.port = port
            self.hostVariable = hostVariable
            self.portVariable = portVariable
        }

        /// `host:port`, `[::1]:port` for an IPv6 host.
        public var text: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    let listener: any Service
    let address: Address

    public init(_ listener: any Service, address: Address) {
        self.listener = listener
        self.address = address
    }

    public var description: String { "listener on \(address.text) (\(address.portVariable))" }

    public func run() async throws {
        try await Self.naming(address) { try await listener.run() }
    }

    /// Runs `body`; a failure to listen on `address` is rethrown as a ``ConfigurationError``
    /// naming the variable, any other error as it is.
    public static func naming<Result: Sendable>(_ address: Address, _ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch let error as IOError where [EADDRINUSE, EACCES, EADDRNOTAVAIL].contains(error.errnoCode) {
            let variable = error.errnoCode == EADDRNOTAVAIL ? address.hostVariable ?? address.portVariable : address.portVariable
            let why = switch error.errnoCode {
            case EADDRINUSE: "another process listens there; stop it or choose another port"
            case EACCES: "permission denied; choose a port above 1023"
            default: "that address is not one of this host's"
            }
            throw ConfigurationError(variable: variable, reason: "cannot listen on \(address.text): \(why)")
        } catch is SocketAddressError {
            throw ConfigurationError(
                variable: address.hostVariable ?? address.portVariable, reason: "cannot listen on \(address.text): the host name does not resolve")
        }
    }
}
