// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import Logging
public import PostgresNIO

/// The read API's queries: a user's entitlements (Stripe and Apple in one list) and transactions.
public struct StateReader: Sendable {
    /// One entitlement as the read API shows it.
    public struct Entitlement: Sendable, Equatable {
        public var id: UUID
        public var state: EntitlementState

        public init(id: UUID, state: EntitlementState) {
            self.id = id
            self.state = state
        }
    }

    /// One transaction as the read API shows it.
    public struct Transaction: Sendable, Equatable {
        public var id: UUID
        public var state: TransactionState

        public init(id: UUID, state: TransactionState) {
            self.id = id
            self.state = state
        }
    }

    let client: PostgresClient
    /// `EVENT_SIGNING_KEY`: which `appAccountToken` registrations count (``AppAccountTokens``).
    let tokenProof: EventProof?
    let logger: Logger

    public init(client: PostgresClient, tokenProof: EventProof?, logger: Logger) {
        self.client = client
        self.tokenProof = tokenProof
        self.logger = logger
    }

    /// The user and the `appAccountToken`s registered to them: the `user_id`s their state may be
    /// stored under until a registration's event moved it.
    private func storedUserIDs(of userID: String) async throws -> [String] {
        [userID] + (try await AppAccountTokens.tokens(ofUser: userID, proof: tokenProof, on: client, logger: logger))
    }

    /// A user's entitlements of `environment` (`nil`: both), with those still stored under an
    /// `appAccountToken` registered to the user (until the registration's event moved them).
    public func entitlements(userID: String, environment: PurchaseEnvironment?) async throws -> [Entitlement] {
        let userIDs = try await storedUserIDs(of: userID)
        return try await entitlements(client.query(
            """
            SELECT id, \(unescaped: EntitlementColumns.list) FROM entitlements
            WHERE user_id = ANY(\(userIDs))
                AND (\(environment?.rawValue)::text IS NULL OR environment = \(environment?.rawValue))
            ORDER BY created_at, id
            """, logger: logger))
    }

    /// The product catalog (``CatalogStore``), archived products too.
    public func catalog() async throws -> [CatalogProduct] {
        try await CatalogStore(client: client, logger: logger).all()
    }

    /// Matches `email` without regard to case, as email addresses are compared in practice.
    public func entitlements(email: String, environment: PurchaseEnvironment?) async throws -> [Entitlement] {
        try await entitlements(client.query(
            """
            SELECT id, \(unescaped: EntitlementColumns.list) FROM entitlements
            WHERE lower(email) = lower(\(email)) AND (\(environment?.rawValue)::text IS NULL OR environment = \(environment?.rawValue))
            ORDER BY created_at, id
            """, logger: logger))
    }

    /// The entitlements with these entity keys (``EntityKey``: `apple:2000…`, `stripe:subscription:sub_…`),
    /// whoever holds them: for an operator looking at a purchase no user is linked to yet.
    public func entitlements(entityKeys: [String]) async throws -> [Entitlement] {
        try await entitlements(client.query(
            """
            SELECT id, \(unescaped: EntitlementColumns.list) FROM entitlements
            WHERE entity_key = ANY(\(entityKeys)) ORDER BY created_at, id
            """, logger: logger))
    }

    /// Every transaction of these entitlements, newest first.
    public func transactions(entityKeys: [String], limit: Int) async throws -> [Transaction] {
        var result: [Transaction] = []
        for try await row in try await client.query(
            """
            SELECT t.id, \(unescaped: TransactionColumns.list) FROM transactions t
            WHERE t.entitlement_key = ANY(\(entityKeys))
            ORDER BY COALESCE(t.purchased_at, t.created_at) DESC, t.created_at DESC, t.id DESC LIMIT \(limit)
            """, logger: logger
        ) {
            result.append(Transaction(id: try row.makeRandomAccess()["id"].decode(UUID.self), state: try TransactionColumns.decode(row)))
        }
        return result
    }

    /// Every transaction of the user in `environment` (`nil`: both), whatever its status, newest first.
    ///
    /// - Parameter startingAfter: the `id` of the last transaction of the previous page; the page
    ///   holds the ones after it in the same order. `nil` for the first page; an id that is not the
    ///   user's gives an empty page.
    public func transactions(
        userID: String, environment: PurchaseEnvironment?, limit: Int, startingAfter: UUID? = nil
    ) async throws -> [Transaction] {
        let userIDs = try await storedUserIDs(of: userID)
        var result: [Transaction] = []
        for try await row in try await client.query(
            """
            SELECT t.id, \(unescaped: TransactionColumns.list) FROM transactions t
            WHERE t.user_id = ANY(\(userIDs))
                AND (\(environment?.rawValue)::text IS NULL OR t.environment = \(environment?.rawValue))
                AND (\(startingAfter)::uuid IS NULL OR (COALESCE(t.purchased_at, t.created_at), t.created_at, t.id) < (
                    SELECT COALESCE(c.purchased_at, c.created_at), c.created_at, c.id FROM transactions c
                    WHERE c.id = \(startingAfter)
                        AND c.user_id = ANY(\(userIDs))))
            ORDER BY COALESCE(t.purchased_at, t.created_at) DESC, t.created_at DESC, t.id DESC LIMIT \(limit)
            """, logger: logger
        ) {
            result.append(Transaction(id: try row.makeRandomAccess()["id"].decode(UUID.self), state: try TransactionColumns.decode(row)))
        }
        return result
    }

    private func entitlements(_ rows: PostgresRowSequence) async throws -> [Entitlement] {
        var result: [Entitlement] = []
        for try await row in rows {
            result.append(Entitlement(id: try row.makeRandomAccess()["id"].decode(UUID.self), state: try EntitlementColumns.decode(row)))
        }
        return result
    }
}

