// SPDX-License-Identifier: Apache-2.0
import Shared

/// Does the work of one job kind.
///
/// A handler that writes to the database does it through ``JobCompletion/commit(_:)``, so its
/// writes and the job's completion commit together. A handler that returns without committing has
/// its job completed by the pool; one that throws has the attempt failed and retried with backoff
/// (or after ``AttemptFailure/retryAfterSeconds``) until it is dead.
protocol JobHandler: Sendable {
    func handle(_ job: ClaimedJob, completion: JobCompletion) async throws
}

/// Thrown by a handler to say more about a failed attempt than an error's text: the delay it asks
/// for before the next attempt (a `Retry-After`) and the HTTP status a remote server answered.
struct AttemptFailure: Error, CustomStringConvertible {
    var reason: String
    var retryAfterSeconds: Double?
    var httpStatus: Int?
    var description: String { reason }
}
