// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import NIOCore
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// A job of a batch that fails after it held writes: its savepoint is rolled back, and what it
/// held goes with it (``HeldWrites/discard()``) — the next job's statement must not write it.
@Suite(.timeLimit(.minutes(3)))
struct HeldWritesRollbackTests {
    /// Saves an entitlement keyed by the job and records the job; a job whose payload is `fail`
    /// throws after both are held.
    struct HoldsThenFails: BatchableJobHandler {
        struct Refused: Error {}

        func applyAnnouncing(_ job: ClaimedJob, in store: StateStore) async throws -> AppliedEvent {
            try await store.save(EntitlementState(
                entityKey: "test:\(job.externalID ?? "")", userID: "user", productID: "pro", productType: .nonConsumable,
                source: .webCheckout, status: .active))
            let call = try #require(OutgoingEventWriter.call([], record: .init(eventID: job.id, entityKey: nil, outcome: .applied)))
            store.writes.hold(call: call.argument, for: job.id)
            if String(buffer: job.payload) == "fail" { throw Refused() }
            return AppliedEvent(outcome: .applied, entityKey: nil, detail: nil)
        }

        func didCommit(_ job: ClaimedJob, _ applied: AppliedEvent) {}
    }

    @Test func aFailedJobsHeldWritesAreNotSentWithTheNextJobs() async throws {
        try await TestDatabase.with { db in
            let store = EventStore(client: db.client, logger: TestDatabase.logger)
            for (id, payload) in [("ok_1", "ok"), ("bad", "fail"), ("ok_2", "ok")] {
                _ = try await store.insert([EventRecord(source: .stripe, externalID: id, type: "test.event", payload: ByteBuffer(string: payload))])
            }
            let pool = WorkerPool(
                queue: JobQueue(client: db.client, name: .events, configuration: .init(maxAttempts: 3), logger: TestDatabase.logger),
                handlers: ["stripe": HoldsThenFails()], configuration: .init(concurrency: 1), logger: TestDatabase.logger)
            let jobs = try await pool.queue.dequeue(limit: 16, owner: "test-batch")
            #expect(jobs.count == 3)
            await pool.executeBatch(jobs)
            #expect(try await db.strings("SELECT entity_key FROM entitlements ORDER BY entity_key") == ["test:ok_1", "test:ok_2"])
            #expect(try await db.scalar("SELECT count(*) FROM applied_events") == 2)
            #expect(try await db.strings("SELECT external_id FROM events WHERE state = 'done' ORDER BY external_id") == ["ok_1", "ok_2"])
        }
    }
}
