// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import NIOCore
import Shared
import Testing
import TestSupport
import HTTPTypes
import HummingbirdTesting
import NIOFoundationCompat
import PostgresNIO

/// Dedup keys outlive their pruned events: an old notification sent again is still a duplicate.
@Suite(.timeLimit(.minutes(3)))
struct RetentionTests {
    @Test func aNotificationResentAfterItsEventWasPrunedIsStillADuplicate() async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run(worker: ["FORWARD_TARGETS": sink.url]) { system in
                let signedAt = Date().addingTimeInterval(-40 * 86_400)
                let body = try system.signer.notificationBody(
                    type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: "5d6e7f80-0000-4000-8000-000000000040",
                    transaction: subscription("4040", user: nil, purchased: signedAt), signedDate: signedAt,
                    appAppleId: TestCredentials.appAppleID)
                func post() async throws -> Int {
                    Int(try await system.client.execute(
                        uri: "/v1/webhooks/appstore-notifications?sandbox=true", method: .post,
                        headers: [.contentType: "application/json"], body: ByteBuffer(data: body)).status.code)
                }
                #expect(try await post() == 200)
                try await system.drain()
                try await system.forward()
                #expect(sink.received.count == 1)
                try await system.db.client.query(
                    "UPDATE events SET finished_at = now() - interval '40 days', received_at = now() - interval '40 days'",
                    logger: TestDatabase.logger)

                let prune = try await OperatorCommandTests.worker(system.db, ["prune", "--older-than", "30d"])
                #expect(prune.status == 0, "\(prune.stderr)")
                #expect(prune.stdout.contains("pruned 1 done events"))
                #expect(try await system.db.scalar("SELECT count(*) FROM events") == 0)
                #expect(try await system.db.scalar("SELECT count(*) FROM event_keys") == 1)

                // Apple sends it again (its history reaches 180 days back): a duplicate, nothing new.
                #expect(try await post() == 200)
                try await system.drain()
                try await system.forward()
                #expect(try await system.db.scalar("SELECT count(*) FROM events") == 0)
                #expect(sink.received.count == 1, "not forwarded twice")
            }
        }
    }

    @Test func keysAreKeptAtLeast180DaysUnlessForced() async throws {
        try await TestDatabase.with { db in
            try await db.client.query(
                "INSERT INTO event_keys (source, external_id, received_at) VALUES ('apple', 'old', now() - interval '200 days'), ('apple', 'recent', now() - interval '20 days')",
                logger: TestDatabase.logger)
            #expect(try await OperatorCommandTests.worker(db, ["prune", "--older-than", "30d", "--keep-keys", "30d"]).status == 2)
            let kept = try await OperatorCommandTests.worker(db, ["prune", "--older-than", "30d", "--keep-keys", "180d"])
            #expect(kept.stdout.contains("forgot 1 event keys"), "\(kept.stdout)")
            #expect(try await db.strings("SELECT external_id FROM event_keys") == ["recent"])
            let forced = try await OperatorCommandTests.worker(db, ["prune", "--older-than", "30d", "--keep-keys", "10d", "--force"])
            #expect(forced.status == 0)
            #expect(try await db.scalar("SELECT count(*) FROM event_keys") == 0)
        }
    }
}
