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
    }

    /// One transaction as the read API shows it.
    public struct Transaction: Sendable, Equatable {
        public var id: UUID
        public var state: TransactionState
    }

    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public func entitlements(userID: String) async throws -> [Entitlement] {
        try await entitlements(client.query(
            "SELECT id, \(unescaped: EntitlementColumns.list) FROM entitlements WHERE user_id = \(userID) ORDER BY created_at, id",
            logger: logger))
    }

    /// Matches `email` without regard to case, as email addresses are compared in practice.
    public func entitlements(email: String) async throws -> [Entitlement] {
        try await entitlements(client.query(
            """
            SELECT id, \(unescaped: EntitlementColumns.list) FROM entitlements
            WHERE lower(email) = lower(\(email)) ORDER BY created_at, id
            """, logger: logger))
    }

    /// Every transaction of the user, whatever its status, newest first.
    public func transactions(userID: String, limit: Int) async throws -> [Transaction] {
        var result: [Transaction] = []
        for try await row in try await client.query(
            """
            SELECT id, \(unescaped: TransactionColumns.list) FROM transactions WHERE user_id = \(userID)
            ORDER BY COALESCE(purchased_at, created_at) DESC, created_at DESC, id LIMIT \(limit)
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
