// SPDX-License-Identifier: Apache-2.0
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import ServiceLifecycleTestKit
import Shared
import Testing
import TestSupport

/// ``GroupCommitWriter`` under graceful shutdown (`ServiceLifecycleTestKit`): what was submitted
/// before is committed and answered, what comes after is refused, and nothing waits forever.
@Suite(.timeLimit(.minutes(3)))
struct GroupCommitWriterShutdownTests {
    static let logger = TestDatabase.logger

    static func record(_ index: Int) -> EventRecord {
        EventRecord(source: .stripe, externalID: "evt_shutdown_\(index)", type: "customer.created", payload: ByteBuffer(string: #"{"id":"evt_shutdown_\#(index)"}"#))
    }

    /// Shutdown arrives while a flush waits on a lock (another transaction holds `events`) and
    /// more submissions queue behind it.
    @Test func submissionsBeforeShutdownAreCommittedAndLaterOnesRefused() async throws {
        try await TestDatabase.with { db in
            let writer = GroupCommitWriter(
                store: EventStore(client: db.client, logger: Self.logger), configuration: .init(flushers: 1, flushTimeout: .seconds(60)),
                logger: Self.logger)
            let (locked, lockTaken) = AsyncStream<Void>.makeStream()
            let (release, releaseLock) = AsyncStream<Void>.makeStream()
            try await testGracefulShutdown { trigger in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        try await db.client.withTransaction(logger: Self.logger) { connection in
                            try await connection.query("LOCK TABLE events IN EXCLUSIVE MODE", logger: Self.logger)
                            lockTaken.yield()
                            for await _ in release { break }
                        }
                    }
                    for await _ in locked { break }
                    group.addTask { try await writer.run() }
                    let answers = try await withThrowingTaskGroup(of: StoreResult.self) { submissions in
                        for index in 0..<8 {
                            submissions.addTask { try await writer.store(Self.record(index), timeout: .seconds(60)) }
                        }
                        let deadline = ContinuousClock.now + .seconds(30)
                        while try await db.scalar(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") == 0,
                            ContinuousClock.now < deadline
                        {
                            try await Task.sleep(for: .milliseconds(20))
                        }
                        // A flush waits on the lock; the other submissions wait for it.
                        trigger.triggerGracefulShutdown()
                        await #expect(throws: GroupCommitWriterError.self, "a submission after shutdown began is refused") {
                            try await writer.store(Self.record(99), timeout: .seconds(60))
                        }
                        releaseLock.finish()
                        return try await submissions.reduce(into: [StoreResult]()) { $0.append($1) }
                    }
                    #expect(answers == Array(repeating: .stored, count: 8))
                    try await group.waitForAll()
                }
            }
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE external_id LIKE 'evt_shutdown_%'") == 8)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE external_id = 'evt_shutdown_99'") == 0)
        }
    }
}
