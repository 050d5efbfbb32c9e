// SPDX-License-Identifier: Apache-2.0
import Shared

/// Does the work of one job kind.
///
/// A handler that writes to the database does it through ``JobCompletion/commit(_:)``, so its
/// writes and the job's completion commit together. A handler that returns without committing has
/// its job completed by the pool; one that throws has the attempt failed and retried with backoff
/// (or after ``RetryLater/delaySeconds``) until it is dead.
protocol JobHandler: Sendable {
    func handle(_ job: ClaimedJob, completion: JobCompletion) async throws
}

/// Thrown by a handler to ask for a specific delay before the next attempt (such as a `Retry-After`).
struct RetryLater: Error, CustomStringConvertible {
    var delaySeconds: Double
    var reason: String
    var description: String { reason }
}
