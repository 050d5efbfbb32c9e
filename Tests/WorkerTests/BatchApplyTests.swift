// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import NIOCore
import PostgresNIO
import Shared
import Testing
import TestSupport
@testable import Worker

/// Events applied in batches (`WORKER_BATCH_SIZE`): one transaction, a savepoint per event.
@Suite(.timeLimit(.minutes(3)))
struct BatchApplyTests {
    static let start = Date().addingTimeInterval(-7_200).rounded
    static func at(_ minutes: Double) -> Date { start.addingTimeInterval(minutes * 60) }

    @Test(arguments: [(0, 16, 0), (1, 16, 1), (5, 2, 3), (32, 16, 2), (33, 16, 3), (7, 1, 7)])
    func claimedJobsAreSplitInOrder(count: Int, size: Int, batches: Int) {
        let jobs = (0..<count).map { ClaimedJob(id: Int64($0), queue: .events, kind: "stripe", attempt: 1, owner: "o", payload: ByteBuffer()) }
        let split = BatchPlan.batches(of: jobs, size: size)
        #expect(split.count == batches)
        #expect(split.allSatisfy { !$0.isEmpty && $0.count <= max(size, 1) })
        #expect(split.flatMap { $0.map(\.id) } == jobs.map(\.id))
    }

    /// Columns: jobs claimed, free slots, WORKER_BATCH_SIZE → the batch size they are split by.
    @Test(arguments: [
        (1, 16, 16, 1), (2, 16, 16, 1), (16, 16, 16, 1), (17, 16, 16, 2),
        (40, 4, 16, 10), (256, 16, 16, 16), (300, 16, 16, 16), (5, 0, 16, 16), (8, 2, 1, 1),
    ])
    func claimedJobsSpreadOverTheFreeSlotsBeforeFillingBatches(claimed: Int, free: Int, maximum: Int, size: Int) {
        #expect(BatchPlan.size(claimed: claimed, freeSlots: free, maximum: maximum) == size)
    }

    /// Events of one ordering key stay together; every batch is in stored order.
    @Test func eventsOfOneKeyStayTogetherAndEachBatchIsInStoredOrder() {
        func job(_ id: Int64, _ key: String?) -> ClaimedJob {
            ClaimedJob(id: id, queue: .events, kind: "apple", attempt: 1, owner: "o", payload: ByteBuffer(),
                       attributes: key.map { ["ordering_key": $0] } ?? [:])
        }
        let jobs = [job(1, "b"), job(2, "a"), job(3, "b"), job(4, nil), job(5, "c"), job(6, "b"), job(7, "a"), job(8, "d")]
        let split = BatchPlan.batches(of: jobs, size: 4)
        // b (3 events) fills the first batch: a (2) does not fit beside it.
        #expect(split.map { $0.map(\.id) } == [[1, 3, 6], [2, 4, 5, 7], [8]])
        let flat = split.flatMap { $0 }
        #expect(Set(flat.map(\.id)) == Set(jobs.map(\.id)), "every job once")
        #expect(split.allSatisfy { $0.count <= 4 })
        for key in ["a", "b"] {
            let batchesHolding = split.filter { $0.contains { $0.attributes["ordering_key"] == key } }
            #expect(batchesHolding.count == 1, "\(key) in one batch")
            let ids = batchesHolding[0].filter { $0.attributes["ordering_key"] == key }.map(\.id)
            #expect(ids == ids.sorted(), "\(key) in stored order")
        }
        #expect(split.allSatisfy { $0.map(\.id) == $0.map(\.id).sorted() }, "each batch in stored order")
        // An entity bigger than a batch fills consecutive batches, earliest first.
        let big = (1...10).map { job(Int64($0), "x") }
        #expect(BatchPlan.batches(of: big, size: 4).map { $0.map(\.id) } == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]])
    }

    /// Stores a subscription's life on Apple and a web purchase and its refund on Stripe.
    static func traffic(_ system: SystemHarness) async throws {
        for index in 0..<4 {
            let id = "77\(index)001"
            let purchase = subscription(id, user: "batch_user_\(index)", purchased: at(0), expires: at(30 * 24 * 60))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: purchase, at: at(0))
            var renewal = purchase
            renewal.transactionId = "\(id)-2"
            renewal.purchaseDate = at(60).millisecondsSince1970
            renewal.expiresDate = at(60 * 24 * 60).millisecondsSince1970
            try await system.notify("DID_RENEW", nil, transaction: renewal, at: at(60))
        }
        try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_77", user: "batch_web", charge: "ch_77"), at: at(1))
        try await system.stripe("charge.refunded", StripeObjects.charge("ch_77", paymentIntent: "pi_77"), at: at(2))
    }

    /// The same traffic applied one event per transaction (size 1) and in one batch: the same state and announcements.
    @Test(arguments: [1, 16])
    func aBatchAppliesAndAnnouncesEveryEventOnceAsAloneWould(size: Int) async throws {
        try await SystemHarness.run { system in
            try await Self.traffic(system)
            if size == 1 { try await system.drain() } else { try await system.drainInBatches(size: size) }
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 10)
            #expect(try await system.outcomes() == Array(repeating: "applied", count: 10))
            for index in 0..<4 {
                let e = try await system.entitlement(userID: "batch_user_\(index)")
                #expect(e["status"] as? String == "active")
                #expect(e["expires_at"] as? String == rfc3339(Self.at(60 * 24 * 60)))
            }
            #expect(try await system.entitlement(userID: "batch_web")["status"] as? String == "refunded")
            // Apple: granted and renewed for each; Stripe: granted, then refunded (entitlement and payment).
            #expect(try await system.db.scalar("SELECT count(*) FROM outgoing_events WHERE type LIKE 'entitlement.%'") == 10)
        }
    }

    @Test func aPoisonEventRollsBackOnlyItselfAndDiesAfterItsAttempts() async throws {
        try await SystemHarness.run(worker: ["MAX_ATTEMPTS": "1"]) { system in
            try await Self.traffic(system)
            let store = EventStore(client: system.db.client, logger: TestDatabase.logger)
            _ = try await store.insert([
                EventRecord(source: .apple, externalID: "poison-1", type: "SUBSCRIBED", payload: ByteBuffer(string: #"{"signedPayload":"not.a.jws"}"#)),
            ])
            try await system.drainInBatches(size: 16)
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 10)
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'dead' AND external_id = 'poison-1'") == 1)
            #expect(try await system.db.scalar("SELECT count(*) FROM applied_events") == 10, "the good ones once, the poison one never")
            #expect(try await system.db.scalar("SELECT count(*) FROM outgoing_events WHERE type LIKE 'entitlement.%'") == 10)
        }
    }

    @Test func aBatchThatCannotCommitRunsEachJobAloneAndLosesNothing() async throws {
        try await SystemHarness.run { system in
            try await Self.traffic(system)
            let jobs = try await system.pool.queue.dequeue(limit: 16, owner: "test-batch")
            #expect(jobs.count == 10)
            // Another worker took one job over (its lease expired and was rescued): the batch's
            // completion fails, the whole batch rolls back, and the others are applied one by one.
            let stolen = try #require(jobs.last)
            try await system.db.client.query(
                "UPDATE events SET locked_by = 'someone-else', attempts = attempts + 1 WHERE id = \(stolen.id)", logger: TestDatabase.logger)
            await system.pool.executeBatch(jobs)
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 9)
            #expect(try await system.db.scalar("SELECT count(*) FROM applied_events") == 9)
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE id = \(stolen.id) AND locked_by = 'someone-else'") == 1)
        }
    }

    /// Another transaction holds an entity's lock (another process's batch): the batch does not
    /// wait for it (nor deadlock with it); that job is deferred, not failed, and applied alone
    /// once the lock is free.
    @Test func aJobWhoseEntityIsLockedElsewhereIsDeferredNotFailed() async throws {
        try await SystemHarness.run { system in
            try await Self.traffic(system)
            let jobs = try await system.pool.queue.dequeue(limit: 16, owner: "test-batch")
            #expect(jobs.count == 10)
            try await withThrowingTaskGroup(of: Void.self) { group in
                let locked = AsyncStream<Void>.makeStream()
                group.addTask {
                    try await system.db.client.withTransaction(logger: TestDatabase.logger) { connection in
                        try await connection.query(
                            "SELECT pg_advisory_xact_lock(hashtextextended('apple:sandbox:770001', 0))", logger: TestDatabase.logger)
                        locked.continuation.finish()
                        try await Task.sleep(for: .milliseconds(800))
                    }
                }
                for await _ in locked.stream {}
                await system.pool.executeBatch(jobs)
                try await group.waitForAll()
            }
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 10)
            #expect(try await system.db.scalar("SELECT count(*) FROM applied_events") == 10)
            #expect(try await system.db.scalar("SELECT count(*) FROM queue_attempts") == 0, "no attempt failed: the locked ones waited alone")
            #expect(try await system.db.scalar("SELECT max(attempts) FROM events") == 1)
        }
    }
}
