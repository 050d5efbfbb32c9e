// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Shared
import Testing
import TestSupport

@testable import Ingest

/// A waiting checkout status is woken by the worker's commit itself: sql/functions/sluice_notify_user_changed.sql's trigger notifies
/// the user of a written transaction, and ``UserChanges`` LISTENs. The poll is set to a minute,
/// so only the notification can end the wait before the test's own deadline.
@Suite(.timeLimit(.minutes(2)))
struct UserChangesTests {
    @Test func aCommittedTransactionWakesItsUsersWaiter() async throws {
        try await TestDatabase.with { db in
            let changes = UserChanges(client: db.client, pollInterval: .seconds(60), logger: TestDatabase.logger)
            try await db.client.query(
                """
                INSERT INTO checkouts (id, user_id, product_id, environment, kind, terms, expires_at)
                VALUES (\(UUID()), 'user_woken', 'pro.lifetime', 'sandbox', 'payment', 't', now() + interval '1 day')
                """, logger: TestDatabase.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await changes.run() }
                defer { group.cancelAll() }
                try await Task.sleep(for: .milliseconds(300))  // LISTEN is in place
                let committed = Flag()
                let answer = try await withTimeout(.seconds(20)) {
                    try await withThrowingTaskGroup(of: Bool?.self) { inner in
                        inner.addTask {
                            try await changes.wait(for: "user_woken", timeout: .seconds(50)) { () -> Bool? in
                                committed.isRaised ? true : nil
                            }
                        }
                        inner.addTask {
                            try await Task.sleep(for: .milliseconds(300))
                            // Another user's write wakes nobody here; then the user's own does.
                            try await Self.insertTransaction(db, user: "user_other", key: "pi_other")
                            committed.raise()
                            try await Self.insertTransaction(db, user: "user_woken", key: "pi_woken")
                            return nil
                        }
                        var woken: Bool?
                        for try await result in inner where result != nil { woken = result }
                        return woken
                    }
                }
                #expect(answer == true, "woken by the commit, long before the one-minute poll or the 50 s wait")
            }
        }
    }

    static func insertTransaction(_ db: TestDatabase, user: String, key: String) async throws {
        try await db.client.query(
            """
            INSERT INTO transactions (source, provider_transaction_id, user_id, product_id, status, environment)
            VALUES ('web_checkout', \(key), \(user), 'pro.lifetime', 'succeeded', 'sandbox')
            """, logger: TestDatabase.logger)
    }
}
