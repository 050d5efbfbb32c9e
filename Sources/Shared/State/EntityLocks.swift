// SPDX-License-Identifier: Apache-2.0
public import Logging
public import PostgresNIO

/// The transaction-scoped advisory locks that serialise the work on one entity (an entitlement's
/// key, a registered token's): how a key becomes a lock, in one place for the worker's store and
/// ingest's token registration.
public enum EntityLocks {
    /// Takes the locks of `sorted` (sorted, so that two transactions locking overlapping keys
    /// never deadlock), waiting for each; held until the transaction ends.
    ///
    /// - Throws: the database's error when a lock cannot be taken (a deadlock, a lock timeout).
    public static func take(_ sorted: [String], on connection: PostgresConnection, logger: Logger) async throws {
        // A function scan yields the array's elements in order, so the locks are taken in it.
        let rows = try await connection.query(
            "SELECT pg_advisory_xact_lock(hashtextextended(key, 0)) FROM unnest(\(sorted)::text[]) AS key", logger: logger)
        // The locks are taken while the statement runs, after its result is described: an error
        // waiting for one arrives with the rows, so they are read (else the next statement fails instead).
        for try await _ in rows {}
    }
}
