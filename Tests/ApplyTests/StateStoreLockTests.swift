// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport

/// An advisory lock is taken while its statement runs, after PostgreSQL has described the result:
/// an error while waiting for it (a deadlock, a lock timeout) arrives with the rows. It must be
/// thrown by ``StateStore/lock(_:)`` itself, or the job's attempt history records only the
/// `25P02 current transaction is aborted` of the next statement and hides the cause.
@Suite(.timeLimit(.minutes(3)))
struct StateStoreLockTests {
    @Test func aLockThatCannotBeTakenThrowsItsOwnError() async throws {
        try await TestDatabase.with { db in
            let logger = TestDatabase.logger
            try await db.client.withTransaction(logger: logger) { holder in
                try await StateStore(connection: holder, logger: logger).lock("stripe:subscription:sub_lock")
                try await db.client.withConnection { waiter in
                    try await waiter.query("BEGIN", logger: logger)
                    try await waiter.query("SET LOCAL lock_timeout = '200ms'", logger: logger)
                    let error = await #expect(throws: PSQLError.self) {
                        try await StateStore(connection: waiter, logger: logger).lock("stripe:subscription:sub_lock")
                    }
                    #expect(error?.serverInfo?[.sqlState] == "55P03", "lock_not_available, not a later statement's 25P02")
                    try await waiter.query("ROLLBACK", logger: logger)
                }
            }
        }
    }

    /// Several keys in one statement: each is held, and a key another transaction holds makes the
    /// whole statement wait, whichever order the keys were given in.
    @Test func severalKeysAreLockedInOneStatementInSortedOrder() async throws {
        try await TestDatabase.with { db in
            let logger = TestDatabase.logger
            try await db.client.withTransaction(logger: logger) { holder in
                try await StateStore(connection: holder, logger: logger).lock(["key_c", "key_a", "key_b", "key_a"])
                var held = -1
                for try await count in try await holder.query(
                    "SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()", logger: logger
                ).decode(Int.self) {
                    held = count
                }
                #expect(held == 3)
                try await db.client.withConnection { waiter in
                    try await waiter.query("BEGIN", logger: logger)
                    try await waiter.query("SET LOCAL lock_timeout = '200ms'", logger: logger)
                    let error = await #expect(throws: PSQLError.self) {
                        try await StateStore(connection: waiter, logger: logger).lock(["key_z", "key_b"])
                    }
                    #expect(error?.serverInfo?[.sqlState] == "55P03")
                    try await waiter.query("ROLLBACK", logger: logger)
                }
            }
        }
    }

    /// A batch's store (``PrefetchedRows``) takes a key once; the free keys without waiting, the
    /// others left to the job; and a lock taken in a savepoint that is rolled back is gone in
    /// PostgreSQL too, so the store takes it again.
    @Test func aBatchTakesEachKeyOnceSkipsHeldOnesAndForgetsRolledBackOnes() async throws {
        try await TestDatabase.with { db in
            let logger = TestDatabase.logger
            func held(_ connection: PostgresConnection) async throws -> Int {
                var count = -1
                for try await n in try await connection.query(
                    "SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()", logger: logger
                ).decode(Int.self) {
                    count = n
                }
                return count
            }
            try await db.client.withTransaction(logger: logger) { other in
                try await StateStore(connection: other, logger: logger).lock("key_busy")
                try await db.client.withTransaction(logger: logger) { connection in
                    let store = StateStore(connection: connection, logger: logger, prefetched: PrefetchedRows())
                    #expect(try await store.tryLock(["key_a", "key_busy", "key_b"]) == ["key_a", "key_b"], "the busy one is not waited for")
                    #expect(try await held(connection) == 2)

                    try await connection.query("SAVEPOINT job", logger: logger)
                    store.prefetched.savepointStarted()
                    try await store.lock(["key_a", "key_c"])
                    #expect(try await held(connection) == 3)
                    try await connection.query("ROLLBACK TO SAVEPOINT job", logger: logger)
                    store.prefetched.savepointRolledBack()
                    #expect(try await held(connection) == 2, "PostgreSQL released key_c with the savepoint")
                    #expect(store.prefetched.unlocked(["key_a", "key_c"]) == ["key_c"])
                    try await store.lock(["key_c"])
                    #expect(try await held(connection) == 3)
                }
            }
        }
    }
}
