// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import Shared

/// The loads of a whole batch: one statement per table, into the store's ``PrefetchedRows``.
extension StateStore {
    /// The links of `keys` (of any kinds and scopes) that exist, in the order asked; one statement.
    func links(_ keys: [PrefetchedRows.LinkKey]) async throws -> [ProviderLink] {
        guard !keys.isEmpty else { return [] }
        try await flush()
        let rows = try await connection.query(
            """
            SELECT l.kind, l.external_id, l.user_id, l.entitlement_key, l.transaction_key, l.account, l.scope
            FROM unnest(\(keys.map(\.kind.rawValue))::text[], \(keys.map(\.externalID))::text[], \(keys.map(\.scope))::text[])
                WITH ORDINALITY AS wanted(kind, external_id, scope, position)
            JOIN provider_links l ON l.kind = wanted.kind AND l.scope = wanted.scope AND l.external_id = wanted.external_id
            ORDER BY wanted.position
            """, logger: logger)
        var links: [ProviderLink] = []
        for try await (kind, externalID, user, entitlement, transaction, account, scope) in rows.decode(
            (String, String, String?, String?, String?, String?, String).self)
        {
            guard let kind = ProviderLink.Kind(rawValue: kind) else { continue }
            links.append(ProviderLink(
                kind, externalID, userID: user, entitlementKey: entitlement, transactionKey: transaction, account: account, scope: scope))
        }
        return links
    }

    /// Loads the links of `keys` into ``prefetched``: one statement.
    public func prefetch(links keys: Set<PrefetchedRows.LinkKey>) async throws {
        guard !keys.isEmpty else { return }
        let found = try await links(Array(keys))
        prefetched.loaded(links: keys, found: found)
    }

    /// Of `keys`, takes the advisory locks that are free now, in sorted order, without waiting for
    /// any (so that two batches never wait for each other here); returns the ones it holds.
    public func tryLock(_ keys: Set<String>) async throws -> Set<String> {
        let wanted = prefetched.unlocked(keys)
        var taken = keys.subtracting(wanted)
        guard !wanted.isEmpty else { return taken }
        // A function scan yields the array's elements in order, and the filter runs on each in turn.
        let rows = try await connection.query(
            """
            SELECT key FROM unnest(\(wanted)::text[]) WITH ORDINALITY AS k(key, position)
            WHERE pg_try_advisory_xact_lock(hashtextextended(key, 0)) ORDER BY position
            """, logger: logger)
        var now: [String] = []
        for try await key in rows.decode(String.self) { now.append(key) }
        prefetched.didLock(now)
        taken.formUnion(now)
        return taken
    }

    /// Loads the entitlement and transaction rows `plan` names into ``prefetched``, locking them
    /// (`FOR UPDATE`, as ``entitlement(_:)`` and ``transaction(_:_:environment:)`` do): two
    /// statements. The caller holds the advisory locks of `plan`'s keys.
    public func prefetch(_ plan: PrefetchedRows.Plan) async throws {
        try await flush()
        if !plan.entitlementKeys.isEmpty {
            let keys = plan.entitlementKeys.sorted()
            var found: [EntitlementState] = []
            var ids: [String: UUID] = [:]
            for try await row in try await connection.query(
                """
                SELECT id AS row_id, \(unescaped: EntitlementColumns.list) FROM entitlements
                WHERE entity_key = ANY(\(keys)::text[]) ORDER BY entity_key FOR UPDATE
                """, logger: logger)
            {
                let state = try EntitlementColumns.decode(row)
                found.append(state)
                ids[state.entityKey] = try row.makeRandomAccess()["row_id"].decode(UUID.self)
            }
            prefetched.loaded(entitlements: keys, found: found, ids: ids)
        }
        if !plan.transactionKeys.isEmpty {
            let keys = Array(plan.transactionKeys)
            var found: [TransactionState] = []
            var ids: [PrefetchedRows.TransactionKey: UUID] = [:]
            for try await row in try await connection.query(
                """
                SELECT id AS row_id, \(unescaped: TransactionColumns.list) FROM transactions
                WHERE (source, environment, provider_transaction_id) IN (
                    SELECT * FROM unnest(\(keys.map(\.source.rawValue))::text[], \(keys.map(\.environment.rawValue))::text[],
                        \(keys.map(\.providerID))::text[]))
                ORDER BY source, environment, provider_transaction_id FOR UPDATE
                """, logger: logger)
            {
                let state = try TransactionColumns.decode(row)
                found.append(state)
                ids[.init(state.source, state.providerTransactionID, environment: state.environment)] =
                    try row.makeRandomAccess()["row_id"].decode(UUID.self)
            }
            prefetched.loaded(transactions: keys, found: found, ids: ids)
        }
        try await prefetch(appAccountTokens: plan.appAccountTokens, into: prefetched)
    }

    /// Takes the free ones of the tokens' locks shared, without waiting, then reads the users of
    /// those in a new statement (so that a registration that committed meanwhile is seen), as
    /// ``userFollowingAppAccountToken(_:)`` does for one: two statements.
    private func prefetch(appAccountTokens tokens: Set<UUID>, into prefetched: PrefetchedRows) async throws {
        guard !tokens.isEmpty else { return }
        let wanted = tokens.sorted { $0.uuidString < $1.uuidString }
        var held: [UUID] = []
        for try await token in try await connection.query(
            """
            SELECT token FROM unnest(\(wanted)::uuid[], \(wanted.map(AppAccountTokens.lockKey))::text[]) AS t(token, lock_key)
            WHERE pg_try_advisory_xact_lock_shared(hashtextextended(lock_key, 0))
            """, logger: logger
        ).decode(UUID.self) {
            held.append(token)
        }
        guard !held.isEmpty else { return }
        var users: [UUID: String] = [:]
        for try await (token, user) in try await connection.query(
            "SELECT token, user_id FROM app_account_token_owners WHERE token = ANY(\(held)::uuid[])", logger: logger
        ).decode((UUID, String).self) {
            users[token] = user
        }
        prefetched.loaded(appAccountTokens: held, found: users)
    }
}
