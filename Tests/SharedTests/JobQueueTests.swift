// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import Shared
import Synchronization
import Testing
import TestSupport
import DevSupport

@Suite(.timeLimit(.minutes(5)))
struct JobQueueTests {
    static let logger = TestDatabase.logger

    @Test func eightConcurrentConsumersTakeEveryJobExactlyOnce() async throws {
        try await TestDatabase.with { db async throws in
            let store = EventStore(client: db.client, logger: Self.logger)
            #expect(try await SyntheticEvents.enqueue(20_000, into: store) == 20_000)
            let queue = JobQueue(client: db.client, name: .events, logger: Self.logger)
            let taken = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for consumer in 0..<8 {
                    group.addTask {
                        var ids: [Int64] = []
                        while true {
                            let jobs = try await queue.dequeue(limit: 25, owner: "consumer-\(consumer)")
                            if jobs.isEmpty { return ids }
                            let done = try await queue.complete(jobs)
                            #expect(done.count == jobs.count)
                            ids += jobs.map(\.id)
                        }
                    }
                }
                return try await group.reduce(into: [Int64]()) { $0 += $1 }
            }
            #expect(taken.count == 20_000)
            #expect(Set(taken).count == 20_000)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'done' AND attempts = 1") == 20_000)
        }
    }

    @Test func duplicateEnqueueMakesNoSecondRow() async throws {
        try await TestDatabase.with { db async throws in
            let store = EventStore(client: db.client, logger: Self.logger)
            let record = SyntheticEvents.record(1)
            #expect(try await store.insert([record]) == [.stored])
            #expect(try await store.insert([record]) == [.duplicate])
            // Copies within one batch: the first is stored, the rest are duplicates.
            let other = SyntheticEvents.record(2)
            #expect(try await store.insert([other, other, record, other]) == [.stored, .duplicate, .duplicate, .duplicate])
            #expect(try await db.scalar("SELECT count(*) FROM events") == 2)
            // The same external id from another source is another event.
            var apple = record
            apple.source = .apple
            #expect(try await store.insert([apple]) == [.stored])
        }
    }

    @Test func storedPayloadIsByteForByte() async throws {
        try await TestDatabase.with { db async throws in
            var record = SyntheticEvents.record(7)
            let bytes: [UInt8] = Array("{\"id\":\"evt_7\",\"note\":\"caf\u{e9} \\u0000 \u{1F600}\"}\r\n".utf8) + [0xFF, 0x00]
            record.payload = ByteBuffer(bytes: bytes)
            _ = try await EventStore(client: db.client, logger: Self.logger).insert([record])
            let job = try #require(try await JobQueue(client: db.client, name: .events, logger: Self.logger)
                .dequeue(limit: 1, owner: "w").first)
            #expect(Array(buffer: job.payload) == bytes)
            #expect(job.kind == "stripe")
        }
    }

    @Test func expiredLeasesReturnToTheQueueAndNothingIsLost() async throws {
        try await TestDatabase.with { db async throws in
            try await SyntheticEvents.enqueue(10, into: EventStore(client: db.client, logger: Self.logger))
            let queue = JobQueue(client: db.client, name: .events, configuration: .init(leaseSeconds: 1), logger: Self.logger)
            let lost = try await queue.dequeue(limit: 10, owner: "dies-holding-leases")
            #expect(lost.count == 10)
            #expect(try await queue.dequeue(limit: 10, owner: "survivor").isEmpty)
            #expect(try await queue.rescueExpiredLeases() == 0)
            try await Task.sleep(for: .milliseconds(1_300))
            #expect(try await queue.rescueExpiredLeases() == 10)
            let retaken = try await queue.dequeue(limit: 20, owner: "survivor")
            #expect(Set(retaken.map(\.id)) == Set(lost.map(\.id)))
            #expect(retaken.allSatisfy { $0.attempt == 2 })
            // The dead worker's late completion is refused: its lease is gone.
            let refused = try await queue.complete(lost)
            #expect(refused.isEmpty)
            #expect(try await queue.complete(retaken).count == 10)
            #expect(try await db.scalar("SELECT count(*) FROM queue_attempts WHERE error LIKE 'lease expired%'") == 10)
        }
    }

    @Test func completionCommitsWithTheCallersWritesOrNotAtAll() async throws {
        try await TestDatabase.with { db async throws in
            try await SyntheticEvents.enqueue(1, into: EventStore(client: db.client, logger: Self.logger))
            let queue = JobQueue(client: db.client, name: .events, logger: Self.logger)
            let job = try #require(try await queue.dequeue(limit: 1, owner: "w").first)
            try await db.client.query("CREATE TABLE effects (job_id bigint)", logger: Self.logger)
            struct Crash: Error {}
            await #expect(throws: (any Error).self) {
                try await db.client.withTransaction(logger: Self.logger) { connection in
                    try await connection.query("INSERT INTO effects VALUES (\(job.id))", logger: Self.logger)
                    try await queue.complete(job, on: connection)
                    throw Crash()
                }
            }
            #expect(try await db.scalar("SELECT count(*) FROM effects") == 0)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'running'") == 1)
            try await db.client.withTransaction(logger: Self.logger) { connection in
                try await connection.query("INSERT INTO effects VALUES (\(job.id))", logger: Self.logger)
                try await queue.complete(job, on: connection)
            }
            #expect(try await db.scalar("SELECT count(*) FROM effects") == 1)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 1)
        }
    }

    @Test func completionAfterTheLeaseWasTakenOverIsRefused() async throws {
        try await TestDatabase.with { db async throws in
            try await SyntheticEvents.enqueue(1, into: EventStore(client: db.client, logger: Self.logger))
            let queue = JobQueue(client: db.client, name: .events, configuration: .init(leaseSeconds: 0.5), logger: Self.logger)
            let stale = try #require(try await queue.dequeue(limit: 1, owner: "slow").first)
            try await Task.sleep(for: .milliseconds(700))
            try await queue.rescueExpiredLeases()
            let fresh = try #require(try await queue.dequeue(limit: 1, owner: "fast").first)
            await #expect(throws: (any Error).self) {
                try await db.client.withTransaction(logger: Self.logger) { connection in
                    try await queue.complete(stale, on: connection)
                }
            }
            #expect(try await queue.fail(stale, error: "late") == .leaseLost)
            let done = try await queue.complete([fresh])
            #expect(done == [fresh.id])
        }
    }

    @Test func failedAttemptsBackOffWithinTheGrowingCappedCeiling() async throws {
        try await TestDatabase.with { db async throws in
            try await SyntheticEvents.enqueue(1, into: EventStore(client: db.client, logger: Self.logger))
            let policy = RetryPolicy(baseSeconds: 100, maxSeconds: 500)
            let queue = JobQueue(client: db.client, name: .events, configuration: .init(maxAttempts: 20, retry: policy), logger: Self.logger)
            for attempt in 1...6 {
                try await db.client.query("UPDATE events SET run_at = now()", logger: Self.logger)
                let job = try #require(try await queue.dequeue(limit: 1, owner: "w").first)
                #expect(job.attempt == attempt)
                let before = Date()
                guard case .retry(let at) = try await queue.fail(job, error: "boom \(attempt)") else {
                    Issue.record("attempt \(attempt) was not retried")
                    return
                }
                let waited = at.timeIntervalSince(before)
                #expect(waited >= -1 && waited <= policy.ceiling(afterAttempt: attempt) + 1)
            }
            // A handler's explicit delay (Retry-After) replaces the backoff.
            try await db.client.query("UPDATE events SET run_at = now()", logger: Self.logger)
            let job = try #require(try await queue.dequeue(limit: 1, owner: "w").first)
            guard case .retry(let at) = try await queue.fail(job, error: "429", retryAfter: 42) else {
                Issue.record("not retried")
                return
            }
            #expect(abs(at.timeIntervalSinceNow - 42) < 3)
        }
    }

    @Test func jobIsDeadAfterMaxAttemptsWithEveryAttemptsError() async throws {
        try await TestDatabase.with { db async throws in
            try await SyntheticEvents.enqueue(1, into: EventStore(client: db.client, logger: Self.logger))
            let queue = JobQueue(
                client: db.client, name: .events,
                configuration: .init(maxAttempts: 3, retry: .init(baseSeconds: 0, maxSeconds: 0)), logger: Self.logger)
            var outcomes: [FailureOutcome] = []
            for attempt in 1...3 {
                let job = try #require(try await queue.dequeue(limit: 1, owner: "w").first)
                outcomes.append(try await queue.fail(job, error: "failure number \(attempt)"))
            }
            #expect(outcomes.count == 3)
            #expect(outcomes.last == .dead)
            #expect(try await queue.dequeue(limit: 1, owner: "w").isEmpty)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'dead' AND last_error = 'failure number 3'") == 1)
            var errors: [String] = []
            for try await error in try await db.client.query(
                "SELECT error FROM queue_attempts WHERE queue = 'events' ORDER BY attempt", logger: Self.logger
            ).decode(String.self) {
                errors.append(error)
            }
            #expect(errors == ["failure number 1", "failure number 2", "failure number 3"])
        }
    }

    @Test func pauseStopsDequeuingAndResumeRestartsIt() async throws {
        try await TestDatabase.with { db async throws in
            try await SyntheticEvents.enqueue(5, into: EventStore(client: db.client, logger: Self.logger))
            let queue = JobQueue(client: db.client, name: .events, logger: Self.logger)
            try await queue.pause()
            try await queue.pause()
            #expect(try await queue.isPaused())
            #expect(try await queue.dequeue(limit: 5, owner: "w").isEmpty)
            try await queue.resume()
            #expect(try await queue.isPaused() == false)
            #expect(try await queue.dequeue(limit: 5, owner: "w").count == 5)
        }
    }

    @Test func releasedJobsArePendingAgainWithoutCountingTheAttempt() async throws {
        try await TestDatabase.with { db async throws in
            try await SyntheticEvents.enqueue(3, into: EventStore(client: db.client, logger: Self.logger))
            let queue = JobQueue(client: db.client, name: .events, logger: Self.logger)
            let jobs = try await queue.dequeue(limit: 3, owner: "w")
            try await queue.release(jobs)
            let again = try await queue.dequeue(limit: 3, owner: "w2")
            #expect(again.count == 3)
            #expect(again.allSatisfy { $0.attempt == 1 })
        }
    }

    @Test func dequeueUsesThePartialIndexOfRunnableRows() async throws {
        try await TestDatabase.with { db async throws in
            try await SyntheticEvents.enqueue(2_000, into: EventStore(client: db.client, logger: Self.logger))
            try await db.client.query("ANALYZE events", logger: Self.logger)
            var plan = ""
            for try await line in try await db.client.query(
                """
                EXPLAIN SELECT id FROM events WHERE state = 'pending' AND run_at <= now()
                ORDER BY run_at LIMIT 10 FOR UPDATE SKIP LOCKED
                """, logger: Self.logger
            ).decode(String.self) {
                plan += line + "\n"
            }
            #expect(plan.contains("events_runnable"), "plan:\n\(plan)")
        }
    }
}
