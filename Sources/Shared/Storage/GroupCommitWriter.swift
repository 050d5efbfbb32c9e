// SPDX-License-Identifier: Apache-2.0
public import Logging
public import ServiceLifecycle
import Synchronization

/// Stores events for many concurrent requests with as few commits as possible (group commit).
///
/// A fixed number of flushers, one database connection each, take whatever has been submitted
/// since their last flush and store it in one transaction (``EventStore/insert(_:)``). When load is
/// light a request is flushed on its own at once; under load, requests that arrive while all
/// flushers wait on a commit share the next one. Each caller is answered only after its row is
/// committed, so a `2xx` still means "durably stored".
///
/// ```swift
/// let writer = GroupCommitWriter(store: EventStore(client: client, logger: logger), logger: logger)
/// // run `writer` in the service group after the PostgresClient and before the HTTP server
/// let result = try await writer.store(record)   // .stored or .duplicate, after COMMIT
/// ```
public final class GroupCommitWriter: Service, CustomStringConvertible {
    public struct Configuration: Sendable {
        /// Flushes in flight at once (each holds one connection while committing).
        public var flushers: Int
        /// The most events one flush commits.
        public var maximumBatchSize: Int
        /// The longest one flush may take before its callers are answered with an error (the
        /// database is down or hangs); whether it committed is then unknown, so nobody is told it did.
        public var flushTimeout: Duration

        public init(flushers: Int = 4, maximumBatchSize: Int = 256, flushTimeout: Duration = .seconds(5)) {
            self.flushers = flushers
            self.maximumBatchSize = min(maximumBatchSize, EventStore.maximumBatchSize)
            self.flushTimeout = flushTimeout
        }
    }

    private struct Submission {
        var record: EventRecord
        var continuation: CheckedContinuation<StoreResult, any Error>
        /// After this, a submission still waiting for a flusher is answered with a timeout, unstored.
        var deadline: ContinuousClock.Instant
    }

    private typealias Flusher = CheckedContinuation<[Submission]?, Never>

    private let store: EventStore
    private let configuration: Configuration
    private let logger: Logger
    private let state: Mutex<StateMachine<Submission, Flusher>>

    public let description = "GroupCommitWriter"

    public init(store: EventStore, configuration: Configuration = .init(), logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        state = Mutex(StateMachine(maximumBatchSize: configuration.maximumBatchSize))
    }

    /// Stores one event, sharing a commit with whatever else is waiting.
    ///
    /// - Parameter timeout: how long it may wait for a flusher; the flush itself is bounded by
    ///   ``Configuration/flushTimeout``.
    /// - Returns: after the commit, whether the row is new or was already there.
    /// - Throws: the database error of the flush (then nothing is promised stored), or
    ///   ``GroupCommitWriterError`` on shutdown or timeout.
    public func store(_ record: EventRecord, timeout: Duration = .seconds(5)) async throws -> StoreResult {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        return try await withCheckedThrowingContinuation { continuation in
            let submission = Submission(record: record, continuation: continuation, deadline: deadline)
            switch state.withLock({ $0.submit(submission) }) {
            case .refuse: continuation.resume(throwing: GroupCommitWriterError.shuttingDown)
            case .queued: break
            case .handOff(let flusher, let batch): flusher.resume(returning: batch)
            }
        }
    }

    /// Flushes until a graceful shutdown, or until cancelled: a sibling service that fails (a
    /// listener that cannot bind) cancels the group, and a writer that waited only for a graceful
    /// shutdown kept the process alive serving nothing (issue 38).
    public func run() async throws {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withDiscardingTaskGroup { group in
                    for _ in 0..<configuration.flushers {
                        group.addTask { await self.flushUntilShutdown() }
                    }
                }
            } onGracefulShutdown: {
                self.beginShutdown()
            }
        } onCancel: {
            self.beginShutdown()
        }
    }

    private func flushUntilShutdown() async {
        while let batch = await nextBatch() {
            await flush(batch)
        }
    }

    private func nextBatch() async -> [Submission]? {
        await withCheckedContinuation { continuation in
            switch state.withLock({ $0.flusherReady(continuation) }) {
            case .flush(let batch): continuation.resume(returning: batch)
            case .exit: continuation.resume(returning: nil)
            case .wait: break
            }
        }
    }

    private func flush(_ batch: [Submission]) async {
        let now = ContinuousClock.now
        let expired = batch.filter { $0.deadline < now }
        for submission in expired { submission.continuation.resume(throwing: GroupCommitWriterError.timedOut) }
        let batch = batch.filter { $0.deadline >= now }
        guard !batch.isEmpty else { return }
        do {
            let records = batch.map(\.record)
            let results = try await withTimeout(configuration.flushTimeout) { [store] in try await store.insert(records) }
            for (submission, result) in zip(batch, results) {
                submission.continuation.resume(returning: result)
            }
        } catch {
            logger.error("storing events failed", metadata: [
                "count": "\(batch.count)", "error": "\(String(reflecting: error))",
            ])
            for submission in batch { submission.continuation.resume(throwing: error) }
        }
    }

    /// Stops taking submissions; what is already pending is still flushed by the busy flushers.
    ///
    /// Flushers are idle only while nothing is pending, so waking the idle ones to exit loses nothing.
    private func beginShutdown() {
        for flusher in state.withLock({ $0.beginShutdown() }) { flusher.resume(returning: nil) }
    }

}

/// Why ``GroupCommitWriter`` refused a submission.
public enum GroupCommitWriterError: Error, CustomStringConvertible {
    case shuttingDown
    /// The event waited longer than its timeout for a flusher (the database is slow or down).
    case timedOut
    public var description: String {
        switch self {
        case .shuttingDown: "the event writer is shutting down"
        case .timedOut: "the event was not stored in time"
        }
    }
}
