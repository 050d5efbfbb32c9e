// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Shared
import Synchronization

/// Which database the read API reads: the streaming replica of `READ_DATABASE_URL` while its
/// lag is known to be within `READ_MAX_LAG_SECONDS`, the primary otherwise. Writes and the
/// StoreKit sync never come here: they stay on the primary.
final class ReplicaLag: Sendable {
    let primary: StateReader
    let replica: StateReader
    let maximumLag: TimeInterval
    private let machine = Mutex(StateMachine())

    init(primary: StateReader, replica: StateReader, maximumLag: TimeInterval) {
        self.primary = primary
        self.replica = replica
        self.maximumLag = maximumLag
    }

    /// The reader for a request now.
    func reader(now: Date = Date()) -> StateReader {
        machine.withLock { $0.readsReplica(now: now, maximumLag: maximumLag) } ? replica : primary
    }

    func lagBound(now: Date = Date()) -> TimeInterval? {
        machine.withLock { $0.lagBound(now: now) }
    }

    func primarySampled(_ position: WALPosition, at time: Date) { machine.withLock { $0.primarySampled(position, at: time) } }
    func replicaReplayed(_ position: WALPosition) { machine.withLock { $0.replicaReplayed(position) } }
    func replicaFailed() { machine.withLock { $0.replicaFailed() } }
}

/// Samples the primary's WAL position and the replica's replay position every `interval`, for
/// ``ReplicaLag``; runs under the ingest's `ServiceGroup`.
struct ReplicaLagMonitor: Service, CustomStringConvertible {
    /// What ServiceLifecycle logs the service as: never its fields.
    var description: String { "ReplicaLagMonitor" }
    let lag: ReplicaLag
    let primary: PostgresClient
    let replica: PostgresClient
    var interval: Duration = .milliseconds(250)
    let metrics: IngestMetrics?
    let logger: Logger

    init(lag: ReplicaLag, primary: PostgresClient, replica: PostgresClient, interval: Duration = .milliseconds(250), metrics: IngestMetrics?, logger: Logger) {
        self.lag = lag
        self.primary = primary
        self.replica = replica
        self.interval = interval
        self.metrics = metrics
        self.logger = logger
    }

    func run() async throws {
        var failing = false
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                try await sample()
                if failing { logger.notice("the read replica answers again") }
                failing = false
            } catch is CancellationError {
                return
            } catch {
                lag.replicaFailed()
                if !failing {
                    logger.warning("the read replica cannot be used: reads go to the primary", metadata: ["error": "\(error)"])
                }
                failing = true
            }
            metrics?.recordReplicaLag(lag.lagBound())
            try? await Task.sleep(for: interval)
        }
    }

    private func sample() async throws {
        let now = Date()
        for try await text in try await primary.query("SELECT pg_current_wal_lsn()::text", logger: logger).decode(String.self) {
            guard let position = WALPosition(text) else { throw ReplicaError.unreadablePosition }
            lag.primarySampled(position, at: now)
        }
        for try await text in try await replica.query("SELECT pg_last_wal_replay_lsn()::text", logger: logger).decode(String?.self) {
            guard let text else { throw ReplicaError.notAReplica }
            guard let position = WALPosition(text) else { throw ReplicaError.unreadablePosition }
            lag.replicaReplayed(position)
        }
    }

    enum ReplicaError: Error, CustomStringConvertible {
        case notAReplica, unreadablePosition

        var description: String {
            switch self {
            case .notAReplica: "READ_DATABASE_URL is not a streaming replica (pg_last_wal_replay_lsn() is null)"
            case .unreadablePosition: "a WAL position could not be read"
            }
        }
    }
}
