// SPDX-License-Identifier: Apache-2.0
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
}
