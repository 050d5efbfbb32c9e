// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import PostgresNIO
import Shared
import Testing
import TestSupport
@testable import Worker

/// `PRUNE_AFTER`: the pruner in `worker run`, run by one worker at a time under its lease.
@Suite(.timeLimit(.minutes(3)))
struct PruneServiceTests {
    static func service(_ db: TestDatabase, owner: String, after: TimeInterval = 86_400) -> PruneService {
        PruneService(
            pruner: QueuePruner(client: db.client, logger: TestDatabase.logger),
            lease: MaintenanceLease(client: db.client, task: "prune", owner: owner, logger: TestDatabase.logger),
            config: .init(after: after), logger: TestDatabase.logger)
    }

    @Test func oneWorkerPrunesOldFinishedRowsAndKeepsEverythingElse() async throws {
        try await TestDatabase.with { db in
            let store = EventStore(client: db.client, logger: TestDatabase.logger)
            _ = try await store.insert((0..<6).map { index in
                EventRecord(source: .stripe, externalID: "evt_prune_\(index)", type: "customer.created", payload: ByteBuffer(string: "{}"))
            })
            // Two finished long ago, one finished just now, one dead long ago, two pending.
            try await db.client.query(
                """
                UPDATE events SET state = CASE WHEN external_id IN ('evt_prune_0', 'evt_prune_1', 'evt_prune_2') THEN 'done'
                    WHEN external_id = 'evt_prune_3' THEN 'dead' ELSE state END,
                    finished_at = CASE WHEN external_id = 'evt_prune_2' THEN now() ELSE now() - interval '3 days' END
                """, logger: TestDatabase.logger)
            let first = Self.service(db, owner: "worker-a")
            let second = Self.service(db, owner: "worker-b")
            let (a, b) = try await (first.runOnce(), second.runOnce())
            #expect([a, b].compactMap { $0 }.count == 1, "one worker holds the lease")
            #expect([a, b].compactMap { $0?.rows }.first == 2)
            #expect(try await db.scalar("SELECT count(*) FROM events") == 4)
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE external_id IN ('evt_prune_0', 'evt_prune_1')") == 0)
            #expect(try await db.scalar("SELECT count(*) FROM event_keys") == 2, "the pruned events stay duplicates")
            #expect(try await db.scalar("SELECT count(*) FROM maintenance_leases WHERE last_run_at IS NOT NULL AND last_error IS NULL") == 1)
            // The holder runs again; the other still may not, until the lease is released or runs out.
            let holder = a == nil ? second : first
            let other = a == nil ? first : second
            #expect(try await holder.runOnce() != nil)
            #expect(try await other.runOnce() == nil)
            try await holder.lease.release()
            #expect(try await other.runOnce() != nil, "a released lease is taken over")
        }
    }

    @Test(arguments: [("7d", 604_800.0), ("30m", 1_800.0), ("90s", 90.0)])
    func pruneAfterIsADuration(text: String, seconds: Double) throws {
        let config = try #require(try PruneService.Config.configured(by: EnvironmentValues(["PRUNE_AFTER": text])))
        #expect(config.after == seconds)
        #expect(config.interval <= .seconds(3_600) && config.interval >= .seconds(60))
    }

    @Test func pruningIsOffByDefaultAndNonsenseIsRefused() throws {
        #expect(try PruneService.Config.configured(by: EnvironmentValues([:])) == nil)
        for bad in ["soon", "10s", "-1d"] {
            #expect(throws: ConfigurationError.self) { try PruneService.Config.configured(by: EnvironmentValues(["PRUNE_AFTER": bad])) }
        }
    }
}
