// SPDX-License-Identifier: Apache-2.0
import Logging
import PostgresNIO
import Shared
import Synchronization

/// Lets a handler commit its own writes together with its job's completion, exactly once.
final class JobCompletion: Sendable {
    let job: ClaimedJob
    private let queue: JobQueue
    private let logger: Logger
    private let committed = Mutex(false)
    private let answered = Mutex<Int?>(nil)
    /// Runs after the handler's writes and before the completion, inside the transaction: tests
    /// use it to crash or stall a worker at the worst moment.
    private let beforeComplete: @Sendable () async throws -> Void

    init(job: ClaimedJob, queue: JobQueue, logger: Logger, beforeComplete: @escaping @Sendable () async throws -> Void = {}) {
        self.job = job
        self.queue = queue
        self.logger = logger
        self.beforeComplete = beforeComplete
    }

    /// The HTTP status the job's remote server answered its successful attempt with, kept by the
    /// pool's completion where the queue records it (a delivery's).
    var httpStatus: Int? { answered.withLock { $0 } }

    func recordAnswer(httpStatus: Int) {
        answered.withLock { $0 = httpStatus }
    }

    /// Whether ``commit(_:)`` has completed the job.
    var isCommitted: Bool { committed.withLock { $0 } }

    /// Runs `body` and marks the job done in one transaction: both commit or neither does.
    ///
    /// - Throws: what `body` throws, or ``JobQueueError/Code/leaseLost`` when another worker owns the job now.
    func commit<Result: Sendable>(_ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        let result = try await queue.client.withTransaction(logger: logger) { connection in
            let result = try await body(connection)
            try await beforeComplete()
            try await queue.complete(job, on: connection)
            return result
        }
        committed.withLock { $0 = true }
        return result
    }
}
