// SPDX-License-Identifier: Apache-2.0
public import Foundation
import PostgresNIO
import Shared

/// What applying events reads and writes of registered `appAccountToken`s (``AppAccountTokens``).
extension StateStore {
    /// The user a registered `appAccountToken` belongs to, once the worker applied its
    /// registration (`app_account_token_owners`); `userID` itself when it is no such token (or `nil`).
    ///
    /// Takes the token's lock shared first, then reads in a new statement: a registration being
    /// applied meanwhile is waited for and then seen (``AppAccountTokens``).
    public func userFollowingAppAccountToken(_ userID: String?) async throws -> String? {
        guard let userID, let token = UUID(uuidString: userID) else { return userID }
        if case let .cached(user) = prefetched.appAccountTokenUser(token) { return user ?? userID }
        for try await _ in try await connection.query(
            "SELECT pg_advisory_xact_lock_shared(hashtextextended(\(AppAccountTokens.lockKey(token)), 0))", logger: logger
        ) {}
        for try await user in try await connection.query(
            "SELECT user_id FROM app_account_token_owners WHERE token = \(token)", logger: logger
        ).decode(String.self) {
            return user
        }
        return userID
    }

    /// Records, under the token's lock taken exclusively, that the worker applied a proven
    /// registration of `token` as `userID`'s. Returns the token's owner afterwards: `userID`, or
    /// the user it was already registered to.
    public func recordAppAccountTokenOwner(_ token: UUID, userID: String, eventID: Int64) async throws -> String {
        try await lock(AppAccountTokens.lockKey(token))
        var owner = userID
        for try await user in try await connection.query(
            """
            WITH inserted AS (
                INSERT INTO app_account_token_owners (token, user_id, event_id) VALUES (\(token), \(userID), \(eventID))
                ON CONFLICT (token) DO NOTHING RETURNING user_id
            )
            SELECT user_id FROM inserted UNION ALL SELECT user_id FROM app_account_token_owners WHERE token = \(token)
            """, logger: logger
        ).decode(String.self) where owner == userID {
            owner = user
        }
        prefetched.loaded(appAccountTokens: [token], found: [token: owner])
        return owner
    }

    /// The keys of `userID`'s entitlements, sorted: the order their locks are taken in.
    public func entitlementKeys(ofUser userID: String) async throws -> [String] {
        try await flush()
        var keys: [String] = []
        for try await key in try await connection.query(
            "SELECT entity_key FROM entitlements WHERE user_id = \(userID) ORDER BY entity_key", logger: logger
        ).decode(String.self) {
            keys.append(key)
        }
        return keys
    }

    /// Gives `userID`'s transactions and provider links to `newUserID` (the entitlements are saved
    /// one by one, under their locks, so that each move is announced).
    public func reassignTransactionsAndLinks(of userID: String, to newUserID: String) async throws {
        prefetched.forgetAllTransactionsAndLinks()
        try await flush()
        try await connection.query(
            "UPDATE transactions SET user_id = \(newUserID), updated_at = now() WHERE user_id = \(userID)", logger: logger)
        try await connection.query(
            "UPDATE provider_links SET user_id = \(newUserID), updated_at = now() WHERE user_id = \(userID)", logger: logger)
    }
}
