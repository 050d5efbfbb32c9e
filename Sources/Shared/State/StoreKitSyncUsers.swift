// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
public import Logging
public import PostgresNIO

/// How many distinct users each purchase was synced for (`storekit_sync_users`), so that one real
/// signed transaction cannot be stored under endless `user_id`s.
public struct StoreKitSyncUsers: Sendable {
    let client: PostgresClient
    let logger: Logger
    /// `SYNC_MAX_USERS_PER_TRANSACTION`.
    public let limit: Int

    public init(client: PostgresClient, limit: Int, logger: Logger) {
        self.client = client
        self.limit = limit
        self.logger = logger
    }

    /// Whether `userID` may sync the purchase `originalTransactionID`: it did before, or fewer
    /// than ``limit`` users did (then it is remembered). Two new users at once may both pass at
    /// the limit; it bounds abuse, not a count anyone relies on.
    public func admit(originalTransactionID: String, userID: String) async throws -> Bool {
        let digest = Data(SHA256.hash(data: Data(userID.utf8)))
        let rows = try await client.query(
            """
            WITH seen AS (
                SELECT count(*) AS users, coalesce(bool_or(user_digest = \(digest)), false) AS known
                FROM storekit_sync_users WHERE original_transaction_id = \(originalTransactionID)
            ), added AS (
                INSERT INTO storekit_sync_users (original_transaction_id, user_digest)
                SELECT \(originalTransactionID), \(digest) FROM seen WHERE NOT known AND users < \(limit)
                ON CONFLICT DO NOTHING RETURNING 1
            )
            SELECT (SELECT known FROM seen) OR EXISTS (SELECT 1 FROM added)
            """, logger: logger)
        for try await admitted in rows.decode(Bool.self) { return admitted }
        return false
    }
}
