// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import NIOPosix
public import Logging
public import PostgresNIO
public import ServiceLifecycle

/// Says whether the process reaches its database: once at start, in one line, and again each time
/// that changes (issue 38: ingest used to start with no word about an unreachable database, and
/// say `connectionCreationCircuitBreakerTripped` a minute later). It probes `SELECT 1` every
/// `interval`, each probe bounded by `DATABASE_TIMEOUT_SECONDS`; the pool reconnects by itself,
/// this only tells.
public struct DatabaseReachability: Service, CustomStringConvertible {
    let client: PostgresClient
    let database: DatabaseURL
    let interval: Duration
    /// What the process does while the database is gone, for the line that says it is.
    let meanwhile: String
    let logger: Logger

    /// - Parameter meanwhile: e.g. "requests that need it answer 503 meanwhile".
    public init(client: PostgresClient, database: DatabaseURL, interval: Duration = .seconds(5), meanwhile: String, logger: Logger) {
        self.client = client
        self.database = database
        self.interval = interval
        self.meanwhile = meanwhile
        self.logger = logger
    }

    /// What ServiceLifecycle logs the service as: never its fields, which hold the database's password.
    public var description: String { "DatabaseReachability" }

    public func run() async throws {
        var machine = StateMachine()
        let started = ContinuousClock.now
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let failure = await probe()
            let elapsed = ContinuousClock.now - started
            let now = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            if let announcement = machine.probed(reachable: failure == nil, at: now) {
                announce(announcement, failure: failure)
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }

    /// `nil` when the database answered; why not otherwise.
    private func probe() async -> (any Error)? {
        let client = self.client
        do {
            _ = try await withTimeout(database.timeout) { try await client.query("SELECT 1", logger: logger) }
            return nil
        } catch {
            // The pool keeps retrying in the background and says only that it gave up: one plain
            // connection attempt says why (refused, no route, a name that does not resolve).
            return await Self.connectionFailure(host: database.host, port: database.port, timeout: database.timeout) ?? error
        }
    }

    /// Why a TCP connection to `host:port` cannot be made within `timeout`; `nil` when it can
    /// (then PostgreSQL itself refused the session, or did not answer in time).
    static func connectionFailure(host: String, port: Int, timeout: Duration) async -> (any Error)? {
        let milliseconds = timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.milliseconds(milliseconds))
                .connect(host: host, port: port).get()
            try? await channel.close()
            return nil
        } catch {
            return error
        }
    }

    private func announce(_ announcement: StateMachine.Announcement, failure: (any Error)?) {
        let place = "the database at \(database.host):\(database.port)/\(database.database)"
        var metadata: Logger.Metadata = [:]
        var why = ""
        if let failure {
            why = ": " + DatabaseProblem.sentence(failure, timeout: database.timeout)
            metadata["error_type"] = "\(DatabaseProblem.typeName(of: failure))"
        }
        let retry = "; retrying every \(DatabaseProblem.seconds(interval)), \(meanwhile)"
        switch announcement {
        case .reached: logger.info("\(place) answers")
        case .unreachable: logger.error("\(place) cannot be reached\(why)\(retry)", metadata: metadata)
        case .lost: logger.error("\(place) can no longer be reached\(why)\(retry)", metadata: metadata)
        case .back(let after): logger.notice("\(place) answers again, after \(Int(after.rounded())) s")
        }
    }
}
