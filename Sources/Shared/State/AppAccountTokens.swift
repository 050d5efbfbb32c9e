// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import Logging
public import PostgresNIO
import NIOFoundationCompat

/// Which user each registered `appAccountToken` is: the app's server registers them
/// (`app_account_tokens`, written by ingest), the read API and the StoreKit sync read them, the
/// worker follows them once it applied the registration's proven queue event
/// (`app_account_token_owners`, which only the worker writes).
///
/// Ingest's readers take a registration row only when the worker applied it or it carries a
/// valid proof (``EventProof/proof(ofToken:userID:)``): a row written with ingest's database
/// credential alone is no registration (docs/operations.md, "Security model").
///
/// The worker's apply of a registration and of an Apple event naming the token are serialised by
/// the token's advisory lock (``lockKey(_:)``): the registration's apply takes it exclusively, an
/// Apple event's shared (``StateStore/userFollowingAppAccountToken(_:)``). So an Apple event either
/// finishes before the registration is applied, and its rows are there for the registration to
/// move, or sees the owner and writes under the user.
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

    /// Registers `token` as `userID`'s: the row (with its proof) and the queue event that moves
    /// what is stored under the token commit together, or neither does.
    public func register(_ token: UUID, userID: String) async throws -> Registration {
        let event = RegisteredEvent(appAccountToken: token, userID: userID)
        var record = EventRecord(
            source: .account, externalID: "app_account_token:\(event.tokenText)", type: Self.registeredEventType,
            eventTime: Date(), orderingKey: event.tokenText, payload: ByteBuffer(data: try JSONEncoder().encode(event)))
        record.proof = proof?.proof(of: record)
        // `nil`: blocked (thrown here, not inside the transaction, whose errors arrive wrapped).
        let registration: Registration? = try await client.withTransaction(logger: logger) { connection in
            try await EntityLocks.take([Self.lockKey(token)], on: connection, logger: logger)
            let rowProof = proof.map { ByteBuffer(bytes: $0.proof(ofToken: token, userID: userID)) }
            let rows = try await connection.query(
                """
                WITH inserted AS (
                    INSERT INTO app_account_tokens (token, user_id, proof) VALUES (\(token), \(userID), \(rowProof))
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
            if !owner.isNew {
                switch try await self.owner(of: token, on: connection) {
                case .some(userID): return .alreadyRegistered
                case .some: return .conflict
                case nil:
                    // The row holding the token is not Sluice's (no valid proof, never applied):
                    // it is no registration. Ingest may not change it; the registration goes
                    // through its proven event alone, which the worker applies.
                    logger.error("an app_account_tokens row without a valid proof holds this token; it is ignored (docs/operations.md)")
                }
            }
            var stored = false
            for try await _ in try await connection.query(try EventStore.insertQuery([record]), logger: logger).decode((String, String).self) {
                stored = true
            }
            return stored ? .registered : try await storedRegistration(record, userID: userID, on: connection)
        }
        guard let registration else { throw RegistrationBlocked() }
        return registration
    }

    /// Why a registration cannot be stored: a queue row Sluice did not write holds its key.
    public struct RegistrationBlocked: Error, CustomStringConvertible {
        public var description: String {
            "a stored registration event that Sluice did not write (no valid proof) holds this token's key; an operator must remove it"
        }
    }

    /// What the registration event already stored under the token's key says, when this one
    /// could not be stored: the same user's (`alreadyRegistered`), another's (`conflict`); `nil`
    /// when it is not Sluice's (no valid proof) or only its key is left.
    private func storedRegistration(_ record: EventRecord, userID: String, on connection: PostgresConnection) async throws -> Registration? {
        let rows = try await connection.query(
            """
            SELECT payload, proof, type, origin FROM events WHERE source = \(record.source.rawValue) AND external_id = \(record.externalID)
            """, logger: logger)
        for try await (payload, presented, type, origin) in rows.decode((ByteBuffer, ByteBuffer?, String, String).self) {
            if let proof {
                guard let presented, proof.verifies(
                    Array(presented.readableBytesView), source: record.source.rawValue, externalID: record.externalID, type: type,
                    origin: origin, payload: payload)
                else { return nil }
            }
            guard let stored = try? JSONDecoder().decode(RegisteredEvent.self, from: Data(buffer: payload)) else { return nil }
            return stored.userID == userID ? .alreadyRegistered : .conflict
        }
        // Only its key is left (pruned): an earlier registration of the token was applied.
        return nil
    }

    /// The user `token` is registered to, if any: a registration the worker applied, or one whose
    /// row carries a valid proof (any row, without `EVENT_SIGNING_KEY`).
    public func owner(of token: UUID) async throws -> String? {
        try await client.withConnection { try await owner(of: token, on: $0) }
    }

    private func owner(of token: UUID, on connection: PostgresConnection) async throws -> String? {
        try await Self.registrations(connection.query(
            """
            SELECT token, user_id, NULL::bytea, true FROM app_account_token_owners WHERE token = \(token)
            UNION ALL SELECT token, user_id, proof, false FROM app_account_tokens WHERE token = \(token)
            """, logger: logger), proof: proof).first?.user
    }

    /// The tokens registered to `userID` (as ``owner(of:)`` takes them), as Apple state stores
    /// them: lowercase UUID text.
    public static func tokens(ofUser userID: String, proof: EventProof?, on client: PostgresClient, logger: Logger) async throws -> [String] {
        try await registrations(client.query(
            """
            SELECT token, user_id, NULL::bytea, true FROM app_account_token_owners WHERE user_id = \(userID)
            UNION ALL SELECT t.token, t.user_id, t.proof, false FROM app_account_tokens t
            WHERE t.user_id = \(userID) AND NOT EXISTS (SELECT 1 FROM app_account_token_owners o WHERE o.token = t.token)
            """, logger: logger), proof: proof).map { $0.token.uuidString.lowercased() }
    }

    /// Of rows `(token, user_id, proof, applied)`, the registrations, those the worker applied
    /// first: an applied one, or a registration row with a valid proof (without a key, any).
    private static func registrations(_ rows: PostgresRowSequence, proof: EventProof?) async throws -> [(token: UUID, user: String)] {
        var applied: [(token: UUID, user: String)] = []
        var proven: [(token: UUID, user: String)] = []
        for try await (token, user, presented, isApplied) in rows.decode((UUID, String, ByteBuffer?, Bool).self) {
            if isApplied {
                applied.append((token, user))
            } else if let proof {
                if let presented, proof.verifies(Array(presented.readableBytesView), token: token, userID: user) { proven.append((token, user)) }
            } else {
                proven.append((token, user))
            }
        }
        let appliedTokens = Set(applied.map(\.token))
        return applied + proven.filter { !appliedTokens.contains($0.token) }
    }
}
