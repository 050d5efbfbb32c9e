// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import ServiceLifecycle

/// The recovery loop of `worker run`: a cycle every `RECOVERY_INTERVAL_SECONDS` (the first one at
/// start), until graceful shutdown. Several workers may run it: each stream is worked by the one
/// that holds its lease.
struct RecoveryService: Service, CustomStringConvertible {
    /// What ServiceLifecycle logs the service as: never its fields, which hold provider keys.
    var description: String { "RecoveryService" }
    let recovery: Recovery
    let interval: Duration
    let owner: String
    let logger: Logger

    func run() async throws {
        await runPeriodically(every: interval, failure: "recovery cycle failed", logger: logger) {
            try await recovery.runCycle(owner: owner, interval: interval, logger: logger)
        }
    }
}
