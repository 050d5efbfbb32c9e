// SPDX-License-Identifier: Apache-2.0
import Foundation
public import Logging
public import PostgresNIO

/// A parsed `DATABASE_URL`: `postgres://user:pass@host:port/db[?sslmode=…][&sslrootcert=…]`.
///
/// `sslmode` means what it means to libpq: `disable` (no TLS), `allow`/`prefer` (TLS when the
/// server offers it, no verification), `require` (TLS, no verification — unless `sslrootcert`
/// names a file, then as `verify-ca`), `verify-ca` (the server's certificate chains to a trusted
/// root), `verify-full` (and is for this host name). The trusted roots are `sslrootcert` (a PEM
/// file, such as a managed database's private CA; `system` for the system's) or the system's.
/// TLS 1.2 at least.
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
    /// `disable`, `allow`, `prefer`, `require`, `verify-ca` or `verify-full`, from `?sslmode=`;
    /// `prefer` when absent, as libpq.
    public var sslMode: String
    /// `?sslrootcert=`: a PEM file of trusted roots, or `system`.
    public var sslRootCert: String?
    /// `DATABASE_TIMEOUT_SECONDS`: the longest anything waits for the database before it gives up
    /// and says so — a connection attempt, a request that needs the database (then `503`), a
    /// command's first query, a probe of ``DatabaseReachability``. Configured once, for every process.
    public var timeout: Duration = .seconds(5)

    /// `DATABASE_URL`, with the password from `DATABASE_PASSWORD` (or `DATABASE_PASSWORD_FILE`)
    /// when given, as libpq's `PGPASSWORD`: the URL can then sit in plain configuration while the
    /// password is a secret file.
    ///
    /// - Throws: ``ConfigurationError`` when `DATABASE_URL` is missing or malformed, or both it
    ///   and `DATABASE_PASSWORD` carry a password.
    public init(environment: EnvironmentValues) throws {
        try self.init(try environment.required("DATABASE_URL"))
        timeout = .milliseconds(Int64(try environment.double("DATABASE_TIMEOUT_SECONDS", default: 5, range: 0.1...300) * 1_000))
        guard let password = environment.string("DATABASE_PASSWORD") else { return }
        guard self.password == nil else {
            throw ConfigurationError(variable: "DATABASE_PASSWORD", reason: "is set while DATABASE_URL has a password too: give one of them")
        }
        self.password = password
    }

    /// Parses a URL.
    ///
    /// - Parameter variable: the variable it came from, for errors (`READ_DATABASE_URL`).
    /// - Throws: ``ConfigurationError`` naming what is wrong (never the password).
    public init(_ string: String, variable: String = "DATABASE_URL") throws {
        guard let components = URLComponents(string: string),
              let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme)
        else {
            throw ConfigurationError(variable: variable, reason: "must look like postgres://user:pass@host:port/db")
        }
        guard let host = components.host, !host.isEmpty else {
            throw ConfigurationError(variable: variable, reason: "has no host")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else {
            throw ConfigurationError(variable: variable, reason: "has no database name")
        }
        self.host = host
        self.port = components.port ?? 5432
        self.username = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        self.password = components.password.flatMap { $0.removingPercentEncoding }
        self.database = database
        let mode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer"
        guard ["disable", "prefer", "require", "allow", "verify-full", "verify-ca"].contains(mode) else {
            throw ConfigurationError(variable: variable, reason: "sslmode \(mode) is not supported")
        }
        self.sslMode = mode
        self.sslRootCert = components.queryItems?.first(where: { $0.name == "sslrootcert" })?.value.flatMap { $0.isEmpty ? nil : $0 }
        if let file = sslRootCert, file != "system", !FileManager.default.isReadableFile(atPath: file) {
            throw ConfigurationError(variable: variable, reason: "sslrootcert names a file that cannot be read")
        }
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
        var query: [URLQueryItem] = []
        if sslMode != "prefer" { query.append(URLQueryItem(name: "sslmode", value: sslMode)) }
        if let sslRootCert { query.append(URLQueryItem(name: "sslrootcert", value: sslRootCert)) }
        if !query.isEmpty { components.queryItems = query }
        return components.string ?? "postgres://\(host):\(port)/\(database)"
    }

    /// The postgres-nio client configuration for this URL.
    ///
    /// - Parameter maximumConnections: the pool's size.
    public func clientConfiguration(maximumConnections: Int = 20) throws -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: try tls())
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .nanoseconds(timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
        return configuration
    }

    /// A pool for this database. Its background logger says warnings and worse only: its line per
    /// failed connection attempt (repeated through an outage, in the driver's words) gives way to
    /// ``DatabaseReachability``'s one line per change.
    public func makeClient(maximumConnections: Int, logger: Logger) throws -> PostgresClient {
        var backgroundLogger = logger
        backgroundLogger.logLevel = max(logger.logLevel, .warning)
        return PostgresClient(configuration: try clientConfiguration(maximumConnections: maximumConnections), backgroundLogger: backgroundLogger)
    }

    /// The TLS of `sslmode` and `sslrootcert`, as libpq reads them.
    func tls() throws -> PostgresClient.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let file = sslRootCert, file != "system" {
            tls.trustRoots = .file(file)
        }
        switch sslMode {
        case "disable":
            return .disable
        case "allow", "prefer":
            tls.certificateVerification = .none
            return .prefer(tls)
        case "require" where sslRootCert == nil:
            tls.certificateVerification = .none
            return .require(tls)
        case "require", "verify-ca":
            tls.certificateVerification = .noHostnameVerification
            return .require(tls)
        default:
            tls.certificateVerification = .fullVerification
            return .require(tls)
        }
    }
}
