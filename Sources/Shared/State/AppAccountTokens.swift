// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import Logging
public import PostgresNIO
import NIOFoundationCompat

/// Which user each registered `appAccountToken` is (`app_account_tokens`): the app's server
/// registers them, the read API and the StoreKit sync read them, the worker follows them.
///
/// A registration and the worker's apply of an Apple event naming the token are serialised by
/// the token's advisory lock (``lockKey(_:)``): the registration takes it exclusively, an apply
/// shared (``StateStore/userFollowingAppAccountToken(_:)``). So an apply either finishes before
/// the registration commits, and its rows are there for the registration's event to move, or
/// sees the registration and writes under the user.
public struct AppAccountTokens: Sendable {
    /// What a registration did.
    public enum Registration: Sendable, Equatable {
        /// The token is now the user's; the queue holds the event that moves its stored state.
        case registered
        /// The token was already this user's: nothing changed.
        case alreadyRegistered
        /// The token is another user's: nothing changed.
        case conflict
    }

    /// The type of the queue event a registration stores (source ``EventSource/account``).
    public static let registeredEventType = "app_account_token.registered"

    let client: PostgresClient
    let logger: Logger
    /// Proves the registration's queue event (`EVENT_SIGNING_KEY`).
    let proof: EventProof?

    public init(client: PostgresClient, proof: EventProof? = nil, logger: Logger) {
        self.client = client
        self.proof = proof
        self.logger = logger
    }

    /// The advisory lock key of a token (lowercase UUID text).
    public static func lockKey(_ token: UUID) -> String {
        "app-account-token:\(token.uuidString.lowercased())"
    }

    /// The body of the registration's queue event: `{"app_account_token":"…","user_id":"…"}`.
    public struct RegisteredEvent: Codable, Sendable, Equatable {
        public var appAccountToken: UUID
        public var userID: String

        public init(appAccountToken: UUID, userID: String) {
            self.appAccountToken = appAccountToken
            self.userID = userID
        }

        /// The token as Apple state stores it: lowercase UUID text.
        public var tokenText: String { appAccountToken.uuidString.lowercased() }

        enum CodingKeys: String, CodingKey {
            case appAccountToken = "app_account_token", userID = "user_id"
        }
    }

    /// Registers `token` as `userID`'s: the row and the queue event that moves what is stored
    /// under the token commit together, or neither does.
    public func register(_ token: UUID, userID: String) async throws -> Registration {
        let event = RegisteredEvent(appAccountToken: token, userID: userID)
        var record = EventRecord(
            source: .account, externalID: "app_account_token:\(event.tokenText)", type: Self.registeredEventType,
            eventTime: Date(), orderingKey: event.tokenText, payload: ByteBuffer(data: try JSONEncoder().encode(event)))
        record.proof = proof?.proof(of: record)
        return try await client.withTransaction(logger: logger) { connection in
            let store = StateStore(connection: connection, logger: logger)
            try await store.lock(Self.lockKey(token))
            let rows = try await connection.query(
                """
                WITH inserted AS (
                    INSERT INTO app_account_tokens (token, user_id) VALUES (\(token), \(userID))
                    ON CONFLICT (token) DO NOTHING RETURNING user_id
                )
                SELECT user_id, true FROM inserted
                UNION ALL SELECT user_id, false FROM app_account_tokens WHERE token = \(token)
                """, logger: logger)
            var owner: (user: String, isNew: Bool)?
            for try await (user, isNew) in rows.decode((String, Bool).self) where owner == nil || isNew {
                owner = (user, isNew)
            }
            guard let owner else { throw StateStoreError(reason: "the token's insert returned no row") }
            guard owner.isNew else { return owner.user == userID ? .alreadyRegistered : .conflict }
            for try await _ in try await connection.query(try EventStore.insertQuery([record]), logger: logger) {}
            return .registered
        }
    }

    /// The user `token` is registered to, if any.
    public func owner(of token: UUID) async throws -> String? {
        for try await user in try await client.query(
            "SELECT user_id FROM app_account_tokens WHERE token = \(token)", logger: logger
        ).decode(String.self) {
            return user
        }
        return nil
    }
}

extension StateStore {
    /// The user a registered `appAccountToken` belongs to; `userID` itself when it is no
    /// registered token (or `nil`).
    ///
    /// Takes the token's lock shared first, then reads in a new statement: a registration
    /// committing meanwhile is waited for and then seen (``AppAccountTokens``).
    public func userFollowingAppAccountToken(_ userID: String?) async throws -> String? {
        guard let userID, let token = UUID(uuidString: userID) else { return userID }
        if case let .cached(user) = prefetched?.appAccountTokenUser(token) { return user ?? userID }
        for try await _ in try await connection.query(
            "SELECT pg_advisory_xact_lock_shared(hashtextextended(\(AppAccountTokens.lockKey(token)), 0))", logger: logger
        ) {}
        for try await user in try await connection.query(
            "SELECT user_id FROM app_account_tokens WHERE token = \(token)", logger: logger
        ).decode(String.self) {
            return user
        }
        return userID
    }

    /// The keys of `userID`'s entitlements, sorted: the order their locks are taken in.
    public func entitlementKeys(ofUser userID: String) async throws -> [String] {
        try await flushPendingWrites()
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
        prefetched?.forgetAllTransactionsAndLinks()
        try await flushPendingWrites()
        try await connection.query(
            "UPDATE transactions SET user_id = \(newUserID), updated_at = now() WHERE user_id = \(userID)", logger: logger)
        try await connection.query(
            "UPDATE provider_links SET user_id = \(newUserID), updated_at = now() WHERE user_id = \(userID)", logger: logger)
    }
}
