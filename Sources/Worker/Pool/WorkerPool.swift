// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Shared
import Synchronization

/// Runs up to `concurrency` jobs of one queue at a time in this process, until graceful shutdown.
///
/// ```swift
/// let pool = WorkerPool(queue: JobQueue(client: client, name: .events, logger: logger),
///                       handlers: ["stripe": StripeHandler()], configuration: .init(concurrency: 16), logger: logger)
/// // in a ServiceGroup after the PostgresClient
/// ```
///
/// The dispatcher dequeues as many jobs as there are free slots, then sleeps until a job finishes,
/// a NOTIFY announces new work, or the poll interval passes. Alongside it, the pool extends the
/// leases of its running jobs, returns other workers' expired leases to the queue, and listens
/// for NOTIFY. On graceful shutdown it stops dequeuing and lets running jobs finish.
final class WorkerPool: Service, CustomStringConvertible {
    struct Configuration: Sendable {
        /// Transactions in flight at once (`WORKER_CONCURRENCY`): jobs alone, or batches.
        var concurrency: Int = 16
        /// The most jobs applied in one transaction (`WORKER_BATCH_SIZE`, events only): jobs
        /// claimed together are applied in batches of this size, each job in a savepoint; `1`
        /// applies each job in a transaction of its own. A lone job never waits for others.
        var batchSize: Int = 1
        /// Whether NOTIFY wakes the pool (`WORKER_LISTEN`); without it the pool polls.
        var listens = true
        /// The fallback poll when no NOTIFY arrives.
        var pollInterval: Duration = .seconds(1)
        /// This process's name in `locked_by`.
        var owner: String = WorkerPool.defaultOwner()
        /// How long one attempt may run before it is abandoned (see `executeWithinLimit`).
        var attemptTimeLimit: Duration = .seconds(60)
        /// How long one of the pool's own statements (dequeue, lease extension, completion)
        /// may take before it is abandoned and tried again (see `withinDatabaseTimeLimit`).
        var databaseTimeLimit: Duration = .seconds(30)
    }

    let queue: JobQueue
    /// Where the pool LISTENs: the queue's client, or a direct connection when the queue's goes
    /// through a transaction-mode pooler (`WORKER_LISTEN_DATABASE_URL`).
    let notifications: PostgresClient
    let handlers: [String: any JobHandler]
    let configuration: Configuration
    let metrics: WorkerMetrics?
    let logger: Logger
    private let wakeup = WakeupSignal()
    private let slots: Mutex<SlotStateMachine<[ClaimedJob]>>
    private let completions: CompletionBatcher

    var description: String { "WorkerPool(\(queue.name))" }

    init(
        queue: JobQueue, handlers: [String: any JobHandler], configuration: Configuration, metrics: WorkerMetrics? = nil,
        notifications: PostgresClient? = nil, logger: Logger
    ) {
        self.queue = queue
        self.notifications = notifications ?? queue.client
        self.handlers = handlers
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        completions = CompletionBatcher(queue: queue, timeLimit: configuration.databaseTimeLimit)
        slots = Mutex(SlotStateMachine(
            concurrency: configuration.concurrency, unitSize: configuration.batchSize,
            runningJobsLimit: Self.runningJobsLimit(
                concurrency: configuration.concurrency, batchSize: configuration.batchSize,
                cores: ProcessInfo.processInfo.activeProcessorCount)))
    }

    /// Looks for runnable jobs now rather than at the next poll: for work this process just created.
    func wake() {
        wakeup.signal()
    }

    static func defaultOwner() -> String {
        "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)-\(UInt16.random(in: 0...UInt16.max))"
    }

    func run() async throws {
        await withDiscardingTaskGroup { helpers in
            if configuration.listens { helpers.addTask { await self.listenForNotifications() } }
            helpers.addTask { await self.extendLeasesPeriodically() }
            await withGracefulShutdownHandler {
                await self.dispatchUntilShutdown()
            } onGracefulShutdown: {
                self.wakeup.signal()
            }
            helpers.cancelAll()
        }
        logger.info("worker pool stopped", metadata: ["queue": "\(queue.name)"])
    }

    /// Returns after shutdown began and every running job finished; claimed jobs that had not
    /// started go back to the queue.
    private func dispatchUntilShutdown() async {
        await withDiscardingTaskGroup { jobs in
            // Cancelled too: a sibling service that failed cancels the group without a graceful shutdown.
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                let limit = slots.withLock { $0.claimLimit }
                guard limit > 0 else {
                    await wakeup.wait(timeout: configuration.pollInterval)
                    continue
                }
                let claimed: [ClaimedJob]
                do {
                    guard let taken = try await claimUnlessShutdownOutwaitsIt(limit: limit) else { continue }
                    claimed = taken
                } catch {
                    if Task.isShuttingDownGracefully || Task.isCancelled { continue }
                    logger.warning("the queue could not be read", metadata: [
                        "queue": "\(queue.name)", "error": "\(ErrorText.describe(error))", "error_type": "\(DatabaseProblem.typeName(of: error))",
                    ])
                    await wakeup.wait(timeout: configuration.pollInterval)
                    continue
                }
                if Task.isShuttingDownGracefully || Task.isCancelled {
                    try? await withinDatabaseTimeLimit { [queue] in try await queue.release(claimed) }
                    break
                }
                let size = BatchPlan.size(
                    claimed: claimed.count, freeSlots: slots.withLock { $0.freeBatchSlots }, maximum: configuration.batchSize)
                let work = BatchPlan.batches(of: claimed, size: size).map { batch in
                    (jobIDs: batch.map(\.id), keys: Set(batch.map(BatchPlan.entity(of:))), payload: batch)
                }
                for unit in slots.withLock({ $0.claimed(work) }) {
                    jobs.addTask { await self.run(unit) }
                }
                if claimed.count < limit {
                    await wakeup.wait(timeout: configuration.pollInterval)
                }
            }
            let unstarted = slots.withLock { $0.shutDown() }.flatMap(\.payload)
            if !unstarted.isEmpty {
                try? await withinDatabaseTimeLimit { [queue] in try await queue.release(unstarted) }
            }
        }
    }

    /// Runs a unit, then, in the same task, the units its end lets start (the next work of its
    /// entities first); wakes the dispatcher as slots free up.
    private func run(_ unit: SlotStateMachine<[ClaimedJob]>.Unit) async {
        var next = [unit]
        while !next.isEmpty {
            let current = next.removeFirst()
            await executeWithinLimit(current.payload)
            next += slots.withLock { $0.finished(current.number) }
            wakeup.signal()
        }
    }

    /// An attempt that hangs must not keep its slot and its lease for ever (seen for real: after
    /// `pg_ctl restart -m immediate`, a few queries never returned and their jobs stayed `running`,
    /// their leases extended by this process). After `attemptTimeLimit` the attempt is abandoned:
    /// its lease is no longer extended, so it expires and the lease rescuer (`LeaseRescueService`) returns the job for another
    /// attempt. Should the abandoned one finish after all, its writes fail the lease check.
    private func executeWithinLimit(_ batch: [ClaimedJob]) async {
        do {
            try await withTimeout(configuration.attemptTimeLimit) {
                if batch.count == 1 { await self.execute(batch[0]) } else { await self.executeBatch(batch) }
            }
        } catch {
            for job in batch {
                metrics?.countAttempt(queue.name, .leaseLost, duration: configuration.attemptTimeLimit)
                logger.error(
                    "attempt abandoned after its time limit; the job returns to the queue when its lease expires",
                    metadata: ["job_id": "\(job.id)", "queue": "\(job.queue)", "attempt": "\(job.attempt)", "limit": "\(configuration.attemptTimeLimit)"])
            }
        }
    }

    /// One attempt of one job: its handler, then completion, or a recorded failure.
    func execute(_ job: ClaimedJob) async {
        var logger = self.logger
        logger[metadataKey: "job_id"] = "\(job.id)"
        logger[metadataKey: "queue"] = "\(job.queue)"
        logger[metadataKey: "attempt"] = "\(job.attempt)"
        let started = ContinuousClock.now
        do {
            guard let handler = handlers[job.kind] else {
                throw JobQueueError(code: .noHandler, jobID: job.id, details: "no handler for kind \(job.kind)")
            }
            let completion = JobCompletion(job: job, queue: queue, logger: logger)
            try await handler.handle(job, completion: completion)
            if !completion.isCommitted {
                guard try await completions.complete(job, httpStatus: completion.httpStatus) else {
                    throw JobQueueError(code: .leaseLost, jobID: job.id)
                }
            }
            metrics?.countAttempt(queue.name, .done, duration: started.duration(to: .now))
            logger.debug("job done")
        } catch {
            await recordFailure(of: job, error, after: started.duration(to: .now), logger: logger)
        }
    }

    /// Records a failed attempt: retried with backoff, or dead after its last attempt.
    func recordFailure(of job: ClaimedJob, _ error: any Error, after elapsed: Duration, logger: Logger) async {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let text = ErrorText.describe(error)
        let failure = error as? AttemptFailure
        do {
            let outcome = try await queue.fail(
                job, error: text, retryAfter: failure?.retryAfterSeconds, durationSeconds: seconds, httpStatus: failure?.httpStatus)
            switch outcome {
            case .dead:
                metrics?.countAttempt(queue.name, .dead, duration: elapsed)
                logger.error("job dead after its last attempt", metadata: ["error": "\(text)"])
            case .retry(let at):
                metrics?.countAttempt(queue.name, .retry, duration: elapsed)
                logger.warning("job failed, will retry", metadata: ["error": "\(text)", "run_at": "\(at)"])
            case .leaseLost:
                metrics?.countAttempt(queue.name, .leaseLost, duration: elapsed)
                logger.warning("job failed after its lease was lost", metadata: ["error": "\(text)"])
            }
        } catch {
            // The lease will expire and the rescuer will return the job; nothing is lost.
            logger.error("recording a failed attempt failed", metadata: ["error": "\(ErrorText.describe(error))"])
        }
    }

    private func listenForNotifications() async {
        while !Task.isCancelled {
            do {
                try await notifications.withConnection { connection in
                    try await connection.listen(on: self.queue.name.notificationChannel) { notifications in
                        // A (re)connected listener may have missed notifications: look once.
                        self.wakeup.signal()
                        for try await _ in notifications { self.wakeup.signal() }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.debug("LISTEN connection lost, reconnecting", metadata: ["error": "\(ErrorText.describe(error))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func extendLeasesPeriodically() async {
        let period = Duration.seconds(max(queue.configuration.leaseSeconds / 3, 0.2))
        while !Task.isCancelled {
            try? await Task.sleep(for: period)
            let ids = slots.withLock { $0.heldJobIDs }
            do {
                try await withinDatabaseTimeLimit { [queue, configuration] in
                    try await queue.extendLeases(of: ids, owner: configuration.owner)
                }
            } catch {
                // Shutting down cancels the loop mid-statement: nothing failed.
                if Task.isCancelled || error is CancellationError { return }
                logger.warning("extending leases failed", metadata: ["error": "\(ErrorText.describe(error))"])
            }
        }
    }

    /// How long a graceful shutdown waits for a claim in flight before it gives up on it.
    static let claimGraceAtShutdown: Duration = .seconds(2)

    /// Claims up to `limit` jobs, within the database time limit; `nil` when a graceful shutdown
    /// began and the claim did not end within ``claimGraceAtShutdown`` after it.
    ///
    /// A claim that ends is handed back by the caller at shutdown, leaving nothing locked. One
    /// stuck on a database that is gone would hold the shutdown for the whole time limit (a worker
    /// took 52 s to stop, issue 38); it is abandoned instead: had it claimed anything after all,
    /// those jobs return when their lease runs out, as after a crash.
    private func claimUnlessShutdownOutwaitsIt(limit: Int) async throws -> [ClaimedJob]? {
        try await withThrowingTaskGroup(of: [ClaimedJob]?.self) { group in
            group.addTask { [self] in
                try await withinDatabaseTimeLimit { [queue, configuration] in
                    try await queue.dequeue(limit: limit, owner: configuration.owner)
                }
            }
            group.addTask {
                try await gracefulShutdown()
                try await Task.sleep(for: Self.claimGraceAtShutdown)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    /// Runs one of the pool's own statements, or throws ``TimeoutError`` after `databaseTimeLimit`.
    ///
    /// Seen for real after `pg_ctl restart -m immediate`: a dequeue issued as the server died never
    /// returned, and the pool took no job again (nor could it shut down). Abandoned, it is retried
    /// on a fresh connection at the next turn.
    private func withinDatabaseTimeLimit<Result: Sendable>(_ body: @Sendable @escaping () async throws -> Result) async throws -> Result {
        do {
            return try await withTimeout(configuration.databaseTimeLimit, body)
        } catch let error as TimeoutError {
            logger.error("a queue statement was abandoned after its time limit", metadata: [
                "queue": "\(queue.name)", "limit": "\(configuration.databaseTimeLimit)",
            ])
            throw error
        }
    }

}
