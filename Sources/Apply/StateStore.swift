// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import Logging
public import PostgresNIO
public import Shared

/// Loads and saves entitlements, transactions and provider links on one connection, inside the
/// caller's transaction (the worker's "apply the event and complete the job" transaction).
///
/// Every save is held (``writes``) and sent in one statement: before any statement of the
/// store's own, so each read sees the saves before it, and by the owner with ``flush()`` before
/// the event's `RELEASE SAVEPOINT` or `COMMIT`. A save answers the row as it was before and its
/// id from ``prefetched`` when the row is known there (loaded ahead under its lock, or saved
/// already), else from a read of the row, locked `FOR UPDATE`.
public struct StateStore: Sendable {
    public let connection: PostgresConnection
    public let logger: Logger
    /// Rows known in memory (``PrefetchedRows``): those a batch loaded ahead and those saved;
    /// reads find them there, writes keep what they saved and forget what they changed in bulk.
    public let prefetched: PrefetchedRows
    /// The saves, records and announcements not sent yet.
    public let writes = HeldWrites()

    public init(connection: PostgresConnection, logger: Logger, prefetched: PrefetchedRows = PrefetchedRows()) {
        self.connection = connection
        self.logger = logger
        self.prefetched = prefetched
    }

    /// Sends what is held (``writes``) in one statement: the owner calls it before the event's
    /// `RELEASE SAVEPOINT` or `COMMIT`, and the store before each statement of its own.
    public func flush() async throws {
        try await writes.send(on: connection, logger: logger)
    }

    /// Serialises every transaction that works on `key` until this one commits or rolls back.
    ///
    /// - Throws: the database's error when the lock cannot be taken (a deadlock, a lock timeout).
    public func lock(_ key: String) async throws {
        try await lock([key])
    }

    /// Takes the keys' locks without waiting: whether all were free (those taken stay held until
    /// the transaction ends). For a lock needed after one that others take first.
    public func tryLock(_ keys: some Collection<String>) async throws -> Bool {
        let sorted = Array(Set(keys)).sorted()
        var all = true
        for try await taken in try await connection.query(
            "SELECT pg_try_advisory_xact_lock(hashtextextended(key, 0)) FROM unnest(\(sorted)::text[]) AS key", logger: logger
        ).decode(Bool.self) {
            all = all && taken
        }
        return all
    }

    /// ``lock(_:)`` for several keys in one round trip, taken in sorted order so that two
    /// transactions locking overlapping keys never deadlock.
    public func lock(_ keys: some Collection<String>) async throws {
        let sorted = prefetched.unlocked(keys)
        guard !sorted.isEmpty else { return }
        try await EntityLocks.take(sorted, on: connection, logger: logger)
        prefetched.didLock(sorted)
    }

    // MARK: Entitlements

    public func entitlement(_ key: String) async throws -> EntitlementState? {
        if case let .cached(row) = prefetched.entitlement(key) { return row }
        try await flush()
        let rows = try await connection.query(
            "SELECT \(unescaped: EntitlementColumns.list) FROM entitlements WHERE entity_key = \(key) FOR UPDATE", logger: logger)
        for try await row in rows { return try EntitlementColumns.decode(row) }
        return nil
    }

    /// The entitlements whose keys start with `prefix` and go on (a subscription's companions,
    /// `<key>#<product>`), locked `FOR UPDATE` in key order. `prefix` must hold `#`: the lookup
    /// uses the index of such keys alone (sql/0026), comparing bytes whatever the collation.
    public func entitlements(keyedUnder prefix: String) async throws -> [EntitlementState] {
        precondition(prefix.contains("#") && !prefix.isEmpty, "companion keys hold #")
        try await flush()
        // The keys that start with `prefix` are those from it up to, not including, it with its last byte one more.
        var bound = Array(prefix.utf8)
        bound[bound.count - 1] += 1
        let upper = String(decoding: bound, as: UTF8.self)
        var found: [EntitlementState] = []
        for try await row in try await connection.query(
            """
            SELECT \(unescaped: EntitlementColumns.list) FROM entitlements
            WHERE strpos(entity_key, '#') > 0 AND entity_key ~>=~ \(prefix) AND entity_key ~<~ \(upper)
            ORDER BY entity_key FOR UPDATE
            """, logger: logger)
        {
            found.append(try EntitlementColumns.decode(row))
        }
        return found
    }

    /// What a save replaced: the stored row's id, and its state before the save (`nil` when new).
    public struct Saved<State: Sendable>: Sendable {
        public var id: UUID
        public var previous: State?
    }

    /// Inserts or updates an entitlement (held, ``writes``), and says what it was before.
    ///
    /// - Parameter announcedActive: the `is_active` that the caller announces with this save (the
    ///   clock sweep announces the access of rows still marked active once it runs out).
    ///
    /// The row before and its id come from ``prefetched``, else from a read locking the row until
    /// the transaction ends, under the entity's lock the caller holds; a new row's id is chosen here.
    @discardableResult
    public func save(_ e: EntitlementState, announcedActive: Bool = false) async throws -> Saved<EntitlementState> {
        let known: (id: UUID, state: EntitlementState)?
        if case let .cached(row) = prefetched.entitlementRow(e.entityKey) {
            known = row
        } else {
            known = try await storedEntitlementRow(e.entityKey)
        }
        let id = known?.id ?? RandomIdentifier.uuid()
        writes.hold(.entitlement(e, id: id, announcedActive: announcedActive))
        prefetched.saved(e, id: id)
        return Saved(id: id, previous: known?.state)
    }

    /// The stored row of `key` with its id, locked `FOR UPDATE`; `nil` when there is none.
    private func storedEntitlementRow(_ key: String) async throws -> (id: UUID, state: EntitlementState)? {
        try await flush()
        let rows = try await connection.query(
            "SELECT id AS row_id, \(unescaped: EntitlementColumns.list) FROM entitlements WHERE entity_key = \(key) FOR UPDATE",
            logger: logger)
        for try await row in rows {
            return (try row.makeRandomAccess()["row_id"].decode(UUID.self), try EntitlementColumns.decode(row))
        }
        return nil
    }

    // MARK: Transactions

    public func transaction(
        _ source: PurchaseSource, _ providerID: String, environment: PurchaseEnvironment
    ) async throws -> TransactionState? {
        if case let .cached(row) = prefetched.transaction(.init(source, providerID, environment: environment)) { return row }
        try await flush()
        let rows = try await connection.query(
            """
            SELECT \(unescaped: TransactionColumns.list) FROM transactions
            WHERE source = \(source.rawValue) AND environment = \(environment.rawValue)
                AND provider_transaction_id = \(providerID) FOR UPDATE
            """, logger: logger)
        for try await row in rows { return try TransactionColumns.decode(row) }
        return nil
    }

    /// The entitlement's paid transactions that have no user yet, for the grants of a purchase
    /// linked late (``CurrencyGrantDecision/grantOnLinking(_:user:product:)``), by provider id.
    ///
    /// Read without sending what is held (a flush here would cut the batch's one statement in
    /// pieces on every late link): the database's rows, each replaced by what the store holds for
    /// it (a save this batch made), and the store's new rows of the entitlement. When a user
    /// assignment of the entitlement is held, every row of it in the database will have a user:
    /// only the store's rows (which took the assignment, or were saved after it) can have none.
    public func paidTransactionsWithoutUser(ofEntitlement key: String) async throws -> [TransactionState] {
        var rows: [PrefetchedRows.TransactionKey: TransactionState?] = [:]
        if !writes.holdsUserAssignment(ofEntitlement: key) {
            try await readPaidTransactionsWithoutUser(ofEntitlement: key, into: &rows)
        }
        let held = prefetched.transactions(ofEntitlement: key, orAmong: Array(rows.keys))
        rows.merge(held) { _, held in held }
        return rows.values.compactMap { $0 }
            .filter { $0.entitlementKey == key && $0.userID == nil && $0.status == .succeeded }
            .sorted { $0.providerTransactionID < $1.providerTransactionID }
    }

    private func readPaidTransactionsWithoutUser(
        ofEntitlement key: String, into rows: inout [PrefetchedRows.TransactionKey: TransactionState?]
    ) async throws {
        for try await row in try await connection.query(
            """
            SELECT \(unescaped: TransactionColumns.list) FROM transactions
            WHERE entitlement_key = \(key) AND user_id IS NULL AND status = 'succeeded'
            """, logger: logger)
        {
            let state = try TransactionColumns.decode(row)
            rows[.init(state.source, state.providerTransactionID, environment: state.environment)] = state
        }
    }

    /// The entitlement a transaction belongs to, read without locking the row: for finding what to
    /// lock, before the advisory locks are taken (a row lock taken first would invert their order).
    public func entitlementKey(
        ofTransaction providerID: String, source: PurchaseSource, environment: PurchaseEnvironment
    ) async throws -> String? {
        if case let .cached(row) = prefetched.transaction(.init(source, providerID, environment: environment)) { return row?.entitlementKey }
        try await flush()
        let rows = try await connection.query(
            """
            SELECT entitlement_key FROM transactions
            WHERE source = \(source.rawValue) AND environment = \(environment.rawValue) AND provider_transaction_id = \(providerID)
            """, logger: logger)
        for try await key in rows.decode(String?.self) { return key }
        return nil
    }

    /// Writes a transaction, and a history row when its status is new (held, ``writes``); says
    /// what it was before, as ``save(_:announcedActive:)`` does.
    ///
    /// - Parameter eventID: the queue row of the event that made the change.
    @discardableResult
    public func save(_ t: TransactionState, eventID: Int64) async throws -> Saved<TransactionState> {
        let key = PrefetchedRows.TransactionKey(t.source, t.providerTransactionID, environment: t.environment)
        let known: (id: UUID, state: TransactionState)?
        if case let .cached(row) = prefetched.transactionRow(key) {
            known = row
        } else {
            known = try await storedTransactionRow(key)
        }
        let id = known?.id ?? RandomIdentifier.uuid()
        writes.hold(.transaction(t, id: id, eventID: eventID))
        prefetched.saved(t, id: id)
        return Saved(id: id, previous: known?.state)
    }

    /// The stored row of `key` with its id, locked `FOR UPDATE`; `nil` when there is none.
    private func storedTransactionRow(_ key: PrefetchedRows.TransactionKey) async throws -> (id: UUID, state: TransactionState)? {
        try await flush()
        let rows = try await connection.query(
            """
            SELECT id AS row_id, \(unescaped: TransactionColumns.list) FROM transactions
            WHERE source = \(key.source.rawValue) AND environment = \(key.environment.rawValue)
                AND provider_transaction_id = \(key.providerID) FOR UPDATE
            """, logger: logger)
        for try await row in rows {
            return (try row.makeRandomAccess()["row_id"].decode(UUID.self), try TransactionColumns.decode(row))
        }
        return nil
    }

    // MARK: Links

    /// The link of `externalID` in `scope` (``ProviderLink/scope``); links of other scopes are not seen.
    public func link(_ kind: ProviderLink.Kind, _ externalID: String, scope: String = "") async throws -> ProviderLink? {
        try await links([(kind, externalID)], scope: scope).first
    }

    /// The links of `ids` in `scope`, in one round trip and in the order asked; an id without a
    /// link is left out.
    public func links(_ ids: [(kind: ProviderLink.Kind, externalID: String)], scope: String = "") async throws -> [ProviderLink] {
        guard !ids.isEmpty else { return [] }
        let keys = ids.map { PrefetchedRows.LinkKey($0.kind, $0.externalID, scope: scope) }
        if let known = prefetched.links(keys) { return known }
        return try await links(keys)
    }

    /// Adds or completes a link; a field the new link leaves `nil` keeps its stored value.
    public func save(_ link: ProviderLink) async throws {
        try await save([link])
    }

    /// Adds or completes links in one round trip, as ``save(_:)-(ProviderLink)`` one after another
    /// in the order given would: a field a link leaves `nil` keeps the value before it.
    ///
    /// A link already stored with every value it carries is not written: an upsert would lock its
    /// row until the transaction ends, and a link many events share (a Stripe customer paying
    /// often) would make their transactions wait for each other for nothing. Rows are written in
    /// the order given (`sluice_save_links`, sql/functions/), so callers that sort them never deadlock
    /// each other.
    public func save(_ links: [ProviderLink]) async throws {
        guard let rows = linksToSave(links) else { return }
        try await flush()
        // sql/functions/sluice_save_links.sql: one statement, one index probe a link. The function's errors
        // (a lock timeout, a deadlock) arrive with its row, so the row is read.
        let result = try await connection.query("SELECT sluice_save_links(\(rows)::jsonb)", logger: logger)
        for try await _ in result {}
    }

    /// The argument of `sluice_save_links` for `links`, for a caller that sends it in a call of its
    /// own (an event's call, ``HeldWrites``); `nil` when none must be written (``PrefetchedRows/saving(_:)``).
    public func linksToSave(_ links: [ProviderLink]) -> String? {
        let links = prefetched.saving(links)
        guard !links.isEmpty else { return nil }
        var json = JSONTextWriter()
        json.array { rows in
            for link in links {
                rows.object { row in
                    row.member("kind", link.kind.rawValue)
                    row.member("scope", link.scope)
                    row.member("external_id", link.externalID)
                    row.member("user_id", link.userID)
                    row.member("entitlement_key", link.entitlementKey)
                    row.member("transaction_key", link.transactionKey)
                    row.member("account", link.account)
                }
            }
        }
        return json.text
    }

    /// Forgets every link of a Stripe Connect account (`account.application.deauthorized`).
    @discardableResult
    public func removeLinks(ofAccount account: String) async throws -> Int {
        prefetched.forgetAllLinks()
        try await flush()
        var count = 0
        for try await _ in try await connection.query(
            "DELETE FROM provider_links WHERE account = \(account) RETURNING kind", logger: logger
        ) {
            count += 1
        }
        return count
    }

    // MARK: Events

    /// Records what became of an event; a second record of the same event is ignored.
    public func record(eventID: Int64, entityKey: String?, outcome: EventOutcome, detail: String? = nil) async throws {
        try await flush()
        try await connection.query(
            """
            INSERT INTO applied_events (event_id, entity_key, outcome, detail)
            VALUES (\(eventID), \(entityKey), \(outcome.rawValue), \(detail)) ON CONFLICT (event_id) DO NOTHING
            """, logger: logger)
    }
}

extension StateStore {
    /// Keeps for operators that the purchase `entityKey` moved from a user to another
    /// (`entitlement_transfers`), and what moved it: `sync` or `registration`.
    public func recordTransfer(
        entityKey: String, from fromUser: String, to toUser: String, cause: String, transactionID: String?, eventID: Int64
    ) async throws {
        try await connection.query(
            """
            INSERT INTO entitlement_transfers (entity_key, from_user, to_user, cause, transaction_id, event_id)
            VALUES (\(entityKey), \(fromUser), \(toUser), \(cause), \(transactionID), \(eventID))
            """, logger: logger)
    }

    /// Gives the user to the entitlement's transactions that had none (a purchase linked late),
    /// held (``HeldStateWrite``): the rows known here take the user at once, the database's when
    /// ``writes`` are sent.
    public func assignUser(_ userID: String, toTransactionsOf entitlementKey: String) async throws {
        prefetched.assignUser(userID, toTransactionsOf: entitlementKey)
        writes.hold(.userAssignment(entitlementKey: entitlementKey, userID: userID))
    }
}
