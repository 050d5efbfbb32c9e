// SPDX-License-Identifier: Apache-2.0
import Foundation
public import PostgresNIO

/// A parsed `DATABASE_URL`: `postgres://user:pass@host:port/db[?sslmode=…]`.
///
/// ```swift
/// let url = try DatabaseURL("postgres://sluice:secret@127.0.0.1:5432/sluice")
/// let client = PostgresClient(configuration: url.clientConfiguration(), backgroundLogger: logger)
/// ```
public struct DatabaseURL: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    /// `disable`, `prefer` or `require`, from `?sslmode=`; `disable` when absent.
    public var sslMode: String

    /// Parses a URL.
    ///
    /// - Throws: ``ConfigurationError`` naming what is wrong (never the password).
    public init(_ string: String) throws {
        guard let components = URLComponents(string: string),
              let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme)
        else {
            throw ConfigurationError(variable: "DATABASE_URL", reason: "must look like postgres://user:pass@host:port/db")
        }
        guard let host = components.host, !host.isEmpty else {
            throw ConfigurationError(variable: "DATABASE_URL", reason: "has no host")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else {
            throw ConfigurationError(variable: "DATABASE_URL", reason: "has no database name")
        }
        self.host = host
        self.port = components.port ?? 5432
        self.username = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        self.password = components.password.flatMap { $0.removingPercentEncoding }
        self.database = database
        let mode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "disable"
        guard ["disable", "prefer", "require", "allow", "verify-full", "verify-ca"].contains(mode) else {
            throw ConfigurationError(variable: "DATABASE_URL", reason: "sslmode \(mode) is not supported")
        }
        self.sslMode = mode
    }

    /// The URL as text, as `DATABASE_URL` takes it (the password percent-encoded; never log it).
    public var urlString: String {
        var components = URLComponents()
        components.scheme = "postgres"
        components.user = username
        components.password = password
        components.host = host
        components.port = port
        components.path = "/" + database
        if sslMode != "disable" { components.queryItems = [URLQueryItem(name: "sslmode", value: sslMode)] }
        return components.string ?? "postgres://\(host):\(port)/\(database)"
    }

    /// The postgres-nio client configuration for this URL.
    ///
    /// - Parameter maximumConnections: the pool's size.
    public func clientConfiguration(maximumConnections: Int = 20) throws -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch sslMode {
        case "disable", "allow": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        default: tls = .require(.makeClientConfiguration())
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }
}
