// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Logging
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// ``LeaseRescueService``: one worker at a time returns jobs whose lease ran out.
@Suite(.timeLimit(.minutes(3)))
struct LeaseRescueServiceTests {
    static let logger = TestDatabase.logger

    static func service(_ db: TestDatabase, owner: String, queue: JobQueue) -> LeaseRescueService {
        LeaseRescueService(
            queues: [queue], lease: MaintenanceLease(client: db.client, task: "rescue", owner: owner, logger: logger), logger: logger)
    }

    @Test func theLeaseHolderReturnsExpiredJobsAndTheOthersWait() async throws {
        try await TestDatabase.with { db in
            try await SyntheticEvents.enqueue(3, into: EventStore(client: db.client, logger: Self.logger))
            let queue = JobQueue(client: db.client, name: .events, configuration: .init(maxAttempts: 2, leaseSeconds: 1), logger: Self.logger)
            // A worker takes the jobs and dies: nothing extends the leases.
            #expect(try await queue.dequeue(limit: 3, owner: "dead-worker").count == 3)
            let first = Self.service(db, owner: "worker-a", queue: queue)
            let second = Self.service(db, owner: "worker-b", queue: queue)
            #expect(try await first.runOnce() == 0, "the leases have not run out yet")
            try await Task.sleep(for: .milliseconds(1_200))
            #expect(try await second.runOnce() == nil, "worker-a holds the rescue lease")
            #expect(try await first.runOnce() == 3)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'pending' AND locked_by IS NULL") == 3)
            #expect(try await db.scalar("SELECT count(*) FROM queue_attempts WHERE error LIKE 'lease expired%'") == 3)
            // Their last attempt lost too: dead-lettered with the reason.
            #expect(try await queue.dequeue(limit: 3, owner: "dead-worker").count == 3)
            try await Task.sleep(for: .milliseconds(1_200))
            #expect(try await first.runOnce() == 3)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'dead'") == 3)
        }
    }
}
