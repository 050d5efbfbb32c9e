// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Logging
import PostgresNIO
import ServiceLifecycle
import ServiceLifecycleTestKit
import Shared
import Testing
import TestSupport

@testable import Worker

/// Graceful shutdown of the worker's services, triggered with `ServiceLifecycleTestKit` while
/// each is in the middle of its work.
@Suite(.timeLimit(.minutes(3)))
struct GracefulShutdownTests {
    static let logger = TestDatabase.logger

    /// Shutdown arrives while a batch is inside its transaction (held up by a lock another
    /// transaction has on `entitlements`): the pool waits for the batch to commit, claims nothing
    /// more and gives back what it had not begun. Drained afterwards, every event is applied and
    /// announced exactly once.
    @Test func aPoolShutDownMidBatchFinishesTheBatchAndGivesBackTheRest() async throws {
        try await SystemHarness.run(worker: ["WORKER_BATCH_SIZE": "4", "WORKER_CONCURRENCY": "1"]) { system in
            try await BatchApplyTests.traffic(system)
            let (locked, lockTaken) = AsyncStream<Void>.makeStream()
            let (release, releaseLock) = AsyncStream<Void>.makeStream()
            let stopped = Flag()
            try await testGracefulShutdown { trigger in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        try await system.db.client.withTransaction(logger: Self.logger) { connection in
                            try await connection.query("LOCK TABLE entitlements IN EXCLUSIVE MODE", logger: Self.logger)
                            lockTaken.yield()
                            for await _ in release { break }
                        }
                    }
                    for await _ in locked { break }
                    group.addTask {
                        try await system.pool.run()
                        stopped.raise()
                    }
                    let deadline = ContinuousClock.now + .seconds(60)
                    while try await system.db.scalar(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") == 0,
                        ContinuousClock.now < deadline
                    {
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'running'") > 0, "a batch is mid-flight")
                    trigger.triggerGracefulShutdown()
                    try await Task.sleep(for: .milliseconds(300))
                    #expect(!stopped.isRaised, "the pool stopped while its batch was still inside its transaction")
                    releaseLock.finish()
                    try await group.waitForAll()
                }
            }
            #expect(stopped.isRaised)
            let done = try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'done'")
            #expect(done > 0 && done < 10, "the batch begun was finished, the rest given back")
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'running'") == 0)
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'pending' AND attempts = 0") == 10 - done)
            #expect(try await system.db.scalar("SELECT count(*) FROM applied_events") == done)
            try await system.drain()
            #expect(try await system.outcomes() == Array(repeating: "applied", count: 10))
            #expect(try await system.db.scalar("SELECT count(*) FROM applied_events") == 10)
            #expect(try await system.db.scalar("SELECT count(*) FROM outgoing_events WHERE type LIKE 'entitlement.%'") == 10)
        }
    }

    /// A leader-run maintenance service stops at shutdown and gives its lease up, so that another
    /// worker takes the task over at once rather than when the lease runs out.
    @Test(arguments: ["rescue", "prune"])
    func aMaintenanceServiceStopsAndGivesItsLeaseUp(task: String) async throws {
        try await TestDatabase.with { db in
            func service(owner: String) -> any MaintenanceTestService {
                let lease = MaintenanceLease(client: db.client, task: task, owner: owner, logger: Self.logger)
                let queue = JobQueue(client: db.client, name: .events, logger: Self.logger)
                switch task {
                case "rescue": return LeaseRescueService(queues: [queue], lease: lease, interval: .seconds(3_600), logger: Self.logger)
                default:
                    return PruneService(
                        pruner: QueuePruner(client: db.client, logger: Self.logger), lease: lease, config: .init(after: 3_600), logger: Self.logger)
                }
            }
            let first = service(owner: "worker-a")
            try await testGracefulShutdown { trigger in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await first.run() }
                    let deadline = ContinuousClock.now + .seconds(60)
                    while try await db.scalar(
                        "SELECT count(*) FROM maintenance_leases WHERE task = \(task) AND leased_by = 'worker-a' AND leased_until > now()") == 0,
                        ContinuousClock.now < deadline
                    {
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    #expect(try await service(owner: "worker-b").passIfLeaseHeld() == false, "worker-a holds the lease while it runs")
                    trigger.triggerGracefulShutdown()
                    try await group.waitForAll()
                }
            }
            #expect(try await service(owner: "worker-b").passIfLeaseHeld(), "worker-b took the task over at once")
        }
    }
}

/// The maintenance services as these tests drive them.
protocol MaintenanceTestService: Service {
    /// One pass; whether this worker held the lease and so ran it.
    func passIfLeaseHeld() async throws -> Bool
}

extension LeaseRescueService: MaintenanceTestService {
    func passIfLeaseHeld() async throws -> Bool { try await runOnce() != nil }
}

extension PruneService: MaintenanceTestService {
    func passIfLeaseHeld() async throws -> Bool { try await runOnce() != nil }
}
