// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Shared

/// Prunes finished queue rows in `worker run` (`PRUNE_AFTER`), so no outside cron is needed: every
/// `interval`, the worker holding the `prune` lease (``MaintenanceLease``) deletes `done` events
/// and deliveries that finished more than `after` ago (their dedup keys stay, ``QueuePruner``),
/// and dedup keys older than `keyRetention`. Off unless `PRUNE_AFTER` is set.
struct PruneService: Service, CustomStringConvertible {
    struct Config: Sendable, Equatable {
        /// `PRUNE_AFTER`: how long a finished row is kept.
        var after: TimeInterval
        /// How long a pruned event's dedup key is kept (at least Apple's 180-day history).
        var keyRetention: TimeInterval = QueuePruner.defaultKeyRetention
        /// How often the lease holder prunes.
        var interval: Duration = .seconds(3_600)

        /// `PRUNE_AFTER` (`90s`, `30m`, `12h`, `7d`); `nil` when unset.
        ///
        /// - Throws: ``ConfigurationError`` for a value that is not a duration of at least a minute.
        static func configured(by environment: EnvironmentValues) throws -> Config? {
            guard let text = environment.string("PRUNE_AFTER") else { return nil }
            guard let seconds = TimeExpression.seconds(text), seconds >= 60 else {
                throw ConfigurationError(variable: "PRUNE_AFTER", reason: "must be a duration of at least a minute, such as 30m, 12h or 7d")
            }
            // Often enough that the table never holds much more than `after` of finished rows.
            return Config(after: seconds, interval: .seconds(min(3_600, max(60, seconds / 4))))
        }
    }

    let pruner: QueuePruner
    let lease: MaintenanceLease
    let config: Config
    let logger: Logger

    var description: String { "PruneService" }

    func run() async throws {
        await lease.runPeriodically(every: config.interval, failure: "pruning failed", logger: logger) { try await runOnce() }
    }

    /// One pass, if this worker holds the lease.
    ///
    /// - Returns: the rows deleted, or `nil` when another worker holds the lease.
    @discardableResult
    func runOnce(now: Date = Date()) async throws -> (rows: Int, keys: Int)? {
        try await lease.ifHeld(interval: config.interval) {
            let deleted = try await pruner.prune(finishedBefore: now.addingTimeInterval(-config.after))
            let keys = try await pruner.pruneKeys(receivedBefore: now.addingTimeInterval(-config.keyRetention))
            let rows = deleted.values.reduce(0, +)
            if rows + keys > 0 {
                logger.info("pruned finished queue rows", metadata: [
                    "events": "\(deleted[.events] ?? 0)", "deliveries": "\(deleted[.deliveries] ?? 0)", "keys": "\(keys)",
                ])
            }
            return (rows, keys)
        }
    }
}
