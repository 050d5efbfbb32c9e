// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// A registration's apply and an Apple event about a purchase stored under the same token take
/// their locks in one order — the entitlement's, then the token's — so neither waits on the other
/// in a cycle (a deadlock PostgreSQL would break by failing one attempt).
@Suite(.timeLimit(.minutes(2)))
struct AppAccountTokenLockOrderTests {
    @Test func aRegistrationAndAnAppleEventOnItsTokenNeverDeadlock() async throws {
        try await SystemHarness.run { system in
            let token = UUID().uuidString.lowercased()
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("4242001", user: token))
            try await system.drain()
            let entity = try #require(try await system.db.strings("SELECT entity_key FROM entitlements WHERE user_id = \(token)").first)
            #expect(try await AppAccountTokenTests.register(system, token: token, user: "acct_lock_order").status == .created)

            // What an Apple event's apply does: its entitlement's lock, then (a moment later) the token's, shared.
            let holding = Flag()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await system.db.client.withTransaction(logger: TestDatabase.logger) { connection in
                        try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(entity), 0))", logger: TestDatabase.logger)
                        holding.raise()
                        try await Task.sleep(for: .milliseconds(500))
                        try await connection.query(
                            "SELECT pg_advisory_xact_lock_shared(hashtextextended(\(AppAccountTokens.lockKey(UUID(uuidString: token)!)), 0))",
                            logger: TestDatabase.logger)
                    }
                }
                group.addTask {
                    while !holding.isRaised { try await Task.sleep(for: .milliseconds(10)) }
                    try await system.drain()
                }
                try await group.waitForAll()
            }
            try await system.drain()
            #expect(try await system.db.strings("SELECT user_id FROM entitlements WHERE entity_key = \(entity)") == ["acct_lock_order"])
            #expect(try await system.db.scalar("SELECT attempts FROM events WHERE source = 'account'") == 1, "applied at its first attempt")
        }
    }
}
