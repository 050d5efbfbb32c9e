// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Shared
import Synchronization
import Testing
import TestSupport

@testable import Worker

/// A handler that writes one `effects` row per job inside the job's completion transaction.
struct RecordingHandler: JobHandler {
    var delay: Duration = .zero

    func handle(_ job: ClaimedJob, completion: JobCompletion) async throws {
        if delay > .zero { try await Task.sleep(for: delay) }
        _ = try await completion.commit { connection in
            try await connection.query("INSERT INTO effects (job_id) VALUES (\(job.id))", logger: TestDatabase.logger)
        }
    }
}

/// ``RecordingHandler`` that counts the attempts it began.
final class StartCountingHandler: JobHandler {
    let recording: RecordingHandler
    private let started = Mutex(0)
    var startedCount: Int { started.withLock { $0 } }

    init(delay: Duration) {
        recording = RecordingHandler(delay: delay)
    }

    func handle(_ job: ClaimedJob, completion: JobCompletion) async throws {
        started.withLock { $0 += 1 }
        try await recording.handle(job, completion: completion)
    }
}

/// Records, per ordering key, how many of its jobs ran at once at most and the order they began.
final class OverlapHandler: JobHandler {
    private struct State {
        var inFlight: [String: Int] = [:]
        var maxInFlight: [String: Int] = [:]
        var began: [String: [Int64]] = [:]
        var maxTotalInFlight = 0
    }
    private let state = Mutex(State())
    let delay: Duration
    var maxInFlight: [String: Int] { state.withLock { $0.maxInFlight } }
    var began: [String: [Int64]] { state.withLock { $0.began } }
    var maxTotalInFlight: Int { state.withLock { $0.maxTotalInFlight } }

    init(delay: Duration) { self.delay = delay }

    func handle(_ job: ClaimedJob, completion: JobCompletion) async throws {
        let key = job.attributes["ordering_key"] ?? ""
        state.withLock { state in
            state.inFlight[key, default: 0] += 1
            state.maxInFlight[key] = max(state.maxInFlight[key] ?? 0, state.inFlight[key] ?? 0)
            state.began[key, default: []].append(job.id)
            state.maxTotalInFlight = max(state.maxTotalInFlight, state.inFlight.values.reduce(0, +))
        }
        defer { state.withLock { $0.inFlight[key, default: 1] -= 1 } }
        try await RecordingHandler(delay: delay).handle(job, completion: completion)
    }
}

/// A handler without writes of its own that counts how often it ran each job.
final class CountingHandler: JobHandler {
    private let state = Mutex([Int64: Int]())
    var counts: [Int64: Int] { state.withLock { $0 } }

    func handle(_ job: ClaimedJob, completion: JobCompletion) async throws {
        state.withLock { $0[job.id, default: 0] += 1 }
    }
}

/// Hangs on a job's first attempt, ignoring cancellation, until `release()`; then tries to write
/// its effect anyway. Later attempts write theirs at once.
final class HangingHandler: JobHandler {
    private let hung = Mutex<CheckedContinuation<Void, Never>?>(nil)

    func handle(_ job: ClaimedJob, completion: JobCompletion) async throws {
        if job.attempt == 1 {
            await withCheckedContinuation { continuation in hung.withLock { $0 = continuation } }
        }
        _ = try await completion.commit { connection in
            try await connection.query("INSERT INTO effects (job_id) VALUES (\(job.id))", logger: TestDatabase.logger)
        }
    }

    var isHanging: Bool { hung.withLock { $0 != nil } }

    func release() {
        hung.withLock { $0?.resume(); $0 = nil }
    }
}

@Suite(.timeLimit(.minutes(3)))
struct WorkerPoolTests {
    static let logger = TestDatabase.logger

    static func pool(_ db: TestDatabase, handlers: [String: any JobHandler], queue: JobQueue.Configuration = .init(), concurrency: Int = 8) -> WorkerPool {
        WorkerPool(
            queue: JobQueue(client: db.client, name: .events, configuration: queue, logger: logger),
            handlers: handlers, configuration: .init(concurrency: concurrency), logger: logger)
    }

    /// Runs `pool` until `until` holds (polled), then shuts it down gracefully and waits for it.
    static func run(
        _ pool: WorkerPool, with others: [any Service] = [], until condition: @Sendable () async throws -> Bool
    ) async throws {
        let group = ServiceGroup(configuration: .init(services: [pool] + others, logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let deadline = ContinuousClock.now + .seconds(60)
            while try await !condition(), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    @Test func everyJobTakesEffectExactlyOnce() async throws {
        try await TestDatabase.with { db async throws in
            try await db.client.query("CREATE TABLE effects (job_id bigint)", logger: Self.logger)
            try await SyntheticEvents.enqueue(600, into: EventStore(client: db.client, logger: Self.logger))
            let pool = Self.pool(db, handlers: ["stripe": RecordingHandler()])
            try await Self.run(pool) { try await db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 600 }
            #expect(try await db.scalar("SELECT count(*) FROM effects") == 600)
            #expect(try await db.scalar("SELECT count(DISTINCT job_id) FROM effects") == 600)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state <> 'done'") == 0)
        }
    }

    /// With `WORKER_LISTEN=false` the pool holds no LISTEN connection and still finds work stored
    /// while it sat idle, by polling.
    @Test func withoutListenAnIdlePoolFindsNewWorkByPolling() async throws {
        try await TestDatabase.with { db async throws in
            try await db.client.query("CREATE TABLE effects (job_id bigint)", logger: Self.logger)
            let pool = WorkerPool(
                queue: JobQueue(client: db.client, name: .events, logger: Self.logger),
                handlers: ["stripe": RecordingHandler()],
                configuration: .init(concurrency: 4, listens: false, pollInterval: .milliseconds(100)), logger: Self.logger)
            let started = ContinuousClock.now
            try await Self.run(pool) {
                if started.duration(to: .now) > .milliseconds(500), try await db.scalar("SELECT count(*) FROM events") == 0 {
                    let listeners = try await db.scalar(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'")
                    #expect(listeners == 0)
                    try await SyntheticEvents.enqueue(40, into: EventStore(client: db.client, logger: Self.logger))
                }
                return try await db.scalar("SELECT count(*) FROM effects") == 40
            }
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 40)
        }
    }

    /// With a connection of its own for LISTEN (`WORKER_LISTEN_DATABASE_URL`, past a
    /// transaction-mode pooler), the pool LISTENs there and new work wakes it, long before its poll.
    @Test func aPoolListensOnItsOwnConnectionWhenGivenOne() async throws {
        try await TestDatabase.with { db async throws in
            try await db.client.query("CREATE TABLE effects (job_id bigint)", logger: Self.logger)
            var configuration = try db.url.clientConfiguration(maximumConnections: 1)
            configuration.options.additionalStartupParameters = [("application_name", "sluice-listener")]
            let listener = PostgresClient(configuration: configuration, backgroundLogger: Self.logger)
            let pool = WorkerPool(
                queue: JobQueue(client: db.client, name: .events, logger: Self.logger),
                handlers: ["stripe": RecordingHandler()],
                configuration: .init(concurrency: 4, listens: true, pollInterval: .seconds(3_600)), notifications: listener,
                logger: Self.logger)
            try await Self.run(pool, with: [listener]) {
                let listening = try await db.scalar(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sluice-listener' AND query ILIKE 'LISTEN%'")
                if listening == 1, try await db.scalar("SELECT count(*) FROM events") == 0 {
                    try await SyntheticEvents.enqueue(10, into: EventStore(client: db.client, logger: Self.logger))
                }
                return try await db.scalar("SELECT count(*) FROM effects") == 10
            }
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 10)
        }
    }

    /// Jobs without writes of their own are completed in shared batches: each once, none left running.
    @Test func jobsWithoutWritesAreCompletedOnceInBatches() async throws {
        try await TestDatabase.with { db async throws in
            try await SyntheticEvents.enqueue(600, into: EventStore(client: db.client, logger: Self.logger))
            let handled = CountingHandler()
            let pool = Self.pool(db, handlers: ["stripe": handled], concurrency: 32)
            try await Self.run(pool) { try await db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 600 }
            #expect(handled.counts.count == 600)
            #expect(handled.counts.values.allSatisfy { $0 == 1 })
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state <> 'done' OR attempts <> 1") == 0)
            #expect(try await db.scalar("SELECT count(*) FROM queue_attempts") == 0)
        }
    }

    @Test func aJobWithoutHandlerIsRetriedThenDeadWithItsHistory() async throws {
        try await TestDatabase.with { db async throws in
            try await SyntheticEvents.enqueue(1, into: EventStore(client: db.client, logger: Self.logger), source: .apple)
            let pool = Self.pool(db, handlers: [:], queue: .init(maxAttempts: 3, retry: .init(baseSeconds: 0.01, maxSeconds: 0.01)))
            try await Self.run(pool) { try await db.scalar("SELECT count(*) FROM events WHERE state = 'dead'") == 1 }
            #expect(try await db.scalar("SELECT attempts FROM events")  == 3)
            #expect(try await db.scalar("SELECT count(*) FROM queue_attempts WHERE error LIKE 'no_handler%'") == 3)
        }
    }

    @Test func gracefulShutdownLetsRunningJobsFinishAndLeavesNothingLocked() async throws {
        try await TestDatabase.with { db async throws in
            try await db.client.query("CREATE TABLE effects (job_id bigint)", logger: Self.logger)
            try await SyntheticEvents.enqueue(200, into: EventStore(client: db.client, logger: Self.logger))
            let handler = StartCountingHandler(delay: .milliseconds(300))
            let pool = Self.pool(db, handlers: ["stripe": handler], concurrency: 4)
            // Shut down once four attempts are inside their handler: jobs claimed but not begun are
            // released instead, so waiting for four `running` rows alone races with that.
            try await Self.run(pool) { handler.startedCount >= 4 }
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'running'") == 0)
            let done = try await db.scalar("SELECT count(*) FROM events WHERE state = 'done'")
            let states = try await db.strings("SELECT state || ' ' || attempts || ' ' || count(*) FROM events GROUP BY state, attempts ORDER BY 1")
            #expect(done >= 4 && done < 200, "\(states)")
            #expect(try await db.scalar("SELECT count(*) FROM effects") == done)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'pending' AND attempts = 0") == 200 - done)
        }
    }

    /// One entity's events run one at a time in this process, in the order stored, while other
    /// entities' events use the other slots; on shutdown, the claimed ones not begun go back.
    @Test func oneEntitysEventsRunOneAtATimeInOrderAndWaitingOnesGoBackAtShutdown() async throws {
        try await TestDatabase.with { db async throws in
            try await db.client.query("CREATE TABLE effects (job_id bigint)", logger: Self.logger)
            let records = (0..<24).map { index in
                EventRecord(
                    source: .stripe, externalID: "evt_overlap_\(index)", type: "test.synthetic", environment: "test",
                    eventTime: Date(), orderingKey: index % 3 == 0 ? "obj_other_\(index)" : "obj_busy",
                    payload: ByteBuffer(string: #"{"id":"evt_overlap_\#(index)","object":"event"}"#))
            }
            _ = try await EventStore(client: db.client, logger: Self.logger).insert(records)
            let handler = OverlapHandler(delay: .milliseconds(40))
            let pool = Self.pool(db, handlers: ["stripe": handler], concurrency: 4)
            try await Self.run(pool) { (handler.began["obj_busy"]?.count ?? 0) >= 6 }
            #expect(handler.maxInFlight["obj_busy"] == 1)
            let began = handler.began["obj_busy"] ?? []
            #expect(began == began.sorted(), "in the order stored")
            #expect(handler.maxTotalInFlight > 1, "other entities' events ran beside it")
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'running'") == 0)
            let done = try await db.scalar("SELECT count(*) FROM events WHERE state = 'done'")
            #expect(try await db.scalar("SELECT count(*) FROM effects") == done)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'pending' AND attempts = 0") == 24 - done)
            #expect(done < 24, "waiting ones were given back, not run")
        }
    }

    @Test func pauseStopsEveryConsumerWithinASecondAndResumeRestartsIt() async throws {
        try await TestDatabase.with { db async throws in
            try await db.client.query("CREATE TABLE effects (job_id bigint)", logger: Self.logger)
            let store = EventStore(client: db.client, logger: Self.logger)
            let queue = JobQueue(client: db.client, name: .events, logger: Self.logger)
            let pools = (0..<3).map { _ in Self.pool(db, handlers: ["stripe": RecordingHandler()]) }
            let group = ServiceGroup(configuration: .init(services: pools, logger: Self.logger))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                // Running: work flows.
                try await SyntheticEvents.enqueue(10, into: store, prefix: "before")
                try await Self.waitFor { try await db.scalar("SELECT count(*) FROM effects") == 10 }
                // Paused: within a second no consumer of the three takes anything more.
                try await queue.pause()
                try await Task.sleep(for: .seconds(1))
                try await SyntheticEvents.enqueue(20, into: store, prefix: "during")
                try await Task.sleep(for: .milliseconds(1_500))
                #expect(try await db.scalar("SELECT count(*) FROM effects") == 10)
                #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'pending'") == 20)
                // Resumed: everything waiting is taken.
                try await queue.resume()
                try await Self.waitFor { try await db.scalar("SELECT count(*) FROM effects") == 30 }
                #expect(try await db.scalar("SELECT count(*) FROM effects") == 30)
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
        }
    }

    /// Polls `condition` until it holds or 30 seconds pass.
    static func waitFor(_ condition: @Sendable () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while try await !condition(), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A hung attempt (a query that never returns) is abandoned after the time limit: the job runs
    /// again and takes effect once; the abandoned attempt, released later, cannot write.
    @Test func aHungAttemptIsAbandonedAndTheJobRunsAgainOnce() async throws {
        try await TestDatabase.with { db async throws in
            try await db.client.query("CREATE TABLE effects (job_id bigint)", logger: Self.logger)
            try await SyntheticEvents.enqueue(1, into: EventStore(client: db.client, logger: Self.logger))
            let handler = HangingHandler()
            let queue = JobQueue(client: db.client, name: .events, configuration: .init(leaseSeconds: 1), logger: Self.logger)
            let pool = WorkerPool(
                queue: queue, handlers: ["stripe": handler], configuration: .init(concurrency: 2, attemptTimeLimit: .milliseconds(500)),
                logger: Self.logger)
            let rescuer = LeaseRescueService(
                queues: [queue], lease: MaintenanceLease(client: db.client, task: "rescue", owner: "test", logger: Self.logger),
                interval: .milliseconds(200), logger: Self.logger)
            try await Self.run(pool, with: [rescuer]) { try await db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 1 }
            #expect(handler.isHanging)
            #expect(try await db.scalar("SELECT attempts FROM events") == 2)
            handler.release()
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await db.scalar("SELECT count(*) FROM effects") == 1)
        }
    }

    /// A dequeue that never returns (seen after `pg_ctl restart -m immediate`; here it waits on a
    /// table lock held by another session) is abandoned after `databaseTimeLimit`, so the pool
    /// still shuts down on time instead of waiting for the statement for ever.
    @Test(.timeLimit(.minutes(3)))
    func aDequeueStuckInTheDatabaseDoesNotHoldUpShutdown() async throws {
        try await TestDatabase.with { db async throws in
            try await SyntheticEvents.enqueue(1, into: EventStore(client: db.client, logger: Self.logger))
            try await DatabaseSession.with(db.url, maximumConnections: 1, logger: Self.logger) { blocker in
                try await blocker.withTransaction(logger: Self.logger) { connection in
                    try await connection.query("LOCK TABLE events IN ACCESS EXCLUSIVE MODE", logger: Self.logger)
                    let pool = WorkerPool(
                        queue: JobQueue(client: db.client, name: .events, logger: Self.logger),
                        handlers: ["stripe": CountingHandler()],
                        configuration: .init(concurrency: 2, databaseTimeLimit: .seconds(1)),
                        logger: Self.logger)
                    let started = ContinuousClock.now
                    try await Self.run(pool) {
                        try await db.scalar("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE events%'") > 0
                    }
                    #expect(started.duration(to: .now) < .seconds(10), "the pool waited for its stuck dequeue")
                }
            }
        }
    }
}
