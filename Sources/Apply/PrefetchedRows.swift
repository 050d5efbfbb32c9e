// SPDX-License-Identifier: Apache-2.0
public import Foundation
import Synchronization
public import Shared

/// What a batch of events read with one statement per table before any of them is applied, so
/// that each event's handler finds its links, locks and rows in memory instead of asking the
/// database for each (``StateStore`` consults it when it has one).
///
/// Each row written is kept as the database holds it once written (timestamps rounded to its
/// microseconds), with its id, so a later event of the batch finds it in memory. Rows are loaded
/// `FOR UPDATE` under the batch's advisory locks, so nobody else changes them until the batch
/// ends; that is what lets a ``StateStore`` hold a known row's save (``HeldWrites``) and
/// answer it from here (``HeldStateWrite``). A link already stored with every value is not written at all.
/// Nothing read on a miss is added. When a savepoint is rolled back, PostgreSQL releases the
/// advisory locks taken inside it and undoes its writes: all of those are forgotten here too.
public final class PrefetchedRows: Sendable {
    /// A provider link's identity: what a lookup names.
    public struct LinkKey: Hashable, Sendable {
        public var kind: ProviderLink.Kind
        public var externalID: String
        public var scope: String

        public init(_ kind: ProviderLink.Kind, _ externalID: String, scope: String) {
            self.kind = kind
            self.externalID = externalID
            self.scope = scope
        }
    }

    /// A transaction row's identity.
    public struct TransactionKey: Hashable, Sendable {
        public var source: PurchaseSource
        public var providerID: String
        public var environment: PurchaseEnvironment

        public init(_ source: PurchaseSource, _ providerID: String, environment: PurchaseEnvironment) {
            self.source = source
            self.providerID = providerID
            self.environment = environment
        }
    }

    /// What a job will lock and load, once its links are known.
    public struct Plan: Sendable, Equatable {
        public var lockKeys: Set<String> = []
        public var entitlementKeys: Set<String> = []
        public var transactionKeys: Set<TransactionKey> = []
        /// Registered `appAccountToken`s whose users the job follows (``StateStore/userFollowingAppAccountToken(_:)``).
        public var appAccountTokens: Set<UUID> = []

        public init(
            lockKeys: Set<String> = [], entitlementKeys: Set<String> = [], transactionKeys: Set<TransactionKey> = [],
            appAccountTokens: Set<UUID> = []
        ) {
            self.lockKeys = lockKeys
            self.entitlementKeys = entitlementKeys
            self.transactionKeys = transactionKeys
            self.appAccountTokens = appAccountTokens
        }

        public mutating func formUnion(_ other: Plan) {
            lockKeys.formUnion(other.lockKeys)
            entitlementKeys.formUnion(other.entitlementKeys)
            transactionKeys.formUnion(other.transactionKeys)
            appAccountTokens.formUnion(other.appAccountTokens)
        }
    }

    /// An answer from memory: `.cached(nil)` is a row known to be absent; `.unknown` must be read.
    public enum Lookup<Row: Sendable>: Sendable {
        case cached(Row?)
        case unknown
    }

    struct Contents {
        /// Advisory locks this transaction holds, outside any open savepoint.
        var locked: Set<String> = []
        /// Advisory locks taken inside the open savepoint: gone if it is rolled back.
        var lockedInSavepoint: Set<String> = []
        var isInSavepoint = false
        var entitlements: [String: EntitlementState?] = [:]
        var transactions: [TransactionKey: TransactionState?] = [:]
        var links: [LinkKey: ProviderLink?] = [:]
        /// The user of each token whose lock is held shared; `nil` for a token nobody registered.
        var tokenUsers: [UUID: String?] = [:]
        /// The row ids of entitlements and transactions known to be stored (loaded or saved), for
        /// a save held back (``HeldStateWrite``) to name the row it updates.
        var entitlementIDs: [String: UUID] = [:]
        var transactionIDs: [TransactionKey: UUID] = [:]
        /// Each job's decoded payload, by queue row id.
        var payloads: [Int64: any Sendable] = [:]
    }

    private let contents = Mutex(Contents())

    public init() {}

    // MARK: Filled by the batch's loads

    /// `found` are the links of `keys` that exist; the others are known to be absent.
    public func loaded(links keys: some Sequence<LinkKey>, found: [ProviderLink]) {
        contents.withLock { contents in
            for key in keys where contents.links[key] == nil { contents.links[key] = .some(nil) }
            for link in found { contents.links[LinkKey(link.kind, link.externalID, scope: link.scope)] = link }
        }
    }

    /// `ids`: the row id of each of `found`, by entity key.
    public func loaded(entitlements keys: some Sequence<String>, found: [EntitlementState], ids: [String: UUID] = [:]) {
        contents.withLock { contents in
            for key in keys { contents.entitlements[key] = .some(nil) }
            for row in found { contents.entitlements[row.entityKey] = row }
            contents.entitlementIDs.merge(ids) { _, loaded in loaded }
        }
    }

    /// `ids`: the row id of each of `found`, by key.
    public func loaded(transactions keys: some Sequence<TransactionKey>, found: [TransactionState], ids: [TransactionKey: UUID] = [:]) {
        contents.withLock { contents in
            for key in keys { contents.transactions[key] = .some(nil) }
            for row in found {
                contents.transactions[TransactionKey(row.source, row.providerTransactionID, environment: row.environment)] = row
            }
            contents.transactionIDs.merge(ids) { _, loaded in loaded }
        }
    }

    /// `found` are the users of the tokens of `keys` that are registered. The caller holds each
    /// token's lock shared, so no registration of them commits before this transaction ends.
    public func loaded(appAccountTokens keys: some Sequence<UUID>, found: [UUID: String]) {
        contents.withLock { contents in
            for key in keys { contents.tokenUsers[key] = .some(found[key]) }
        }
    }

    // MARK: Read by the handlers

    /// The job's payload as `decode` makes it, decoded once for the batch's loads and its apply.
    public func payload<Payload: Sendable>(of jobID: Int64, _ decode: () throws -> Payload) rethrows -> Payload {
        if let known = contents.withLock({ $0.payloads[jobID] }) as? Payload { return known }
        let decoded = try decode()
        contents.withLock { $0.payloads[jobID] = decoded }
        return decoded
    }

    public func entitlement(_ key: String) -> Lookup<EntitlementState> {
        contents.withLock { $0.entitlements[key].map(Lookup.cached) ?? .unknown }
    }

    public func transaction(_ key: TransactionKey) -> Lookup<TransactionState> {
        contents.withLock { $0.transactions[key].map(Lookup.cached) ?? .unknown }
    }

    /// The entitlement's row as known here, with its id: `.cached(nil)` when known to be absent.
    /// A row known without its id (saved by a caller that did not give it) is `.unknown`.
    public func entitlementRow(_ key: String) -> Lookup<(id: UUID, state: EntitlementState)> {
        contents.withLock { Self.row(key, states: $0.entitlements, ids: $0.entitlementIDs) }
    }

    /// The transaction's row as known here, with its id, as ``entitlementRow(_:)``.
    public func transactionRow(_ key: TransactionKey) -> Lookup<(id: UUID, state: TransactionState)> {
        contents.withLock { Self.row(key, states: $0.transactions, ids: $0.transactionIDs) }
    }

    /// A row as known from a table's states (`nil`: known to be absent) and the ids known of them.
    private static func row<Key: Hashable, State: Sendable>(_ key: Key, states: [Key: State?], ids: [Key: UUID]) -> Lookup<(id: UUID, state: State)> {
        guard let known = states[key] else { return .unknown }
        guard let state = known else { return .cached(nil) }
        guard let id = ids[key] else { return .unknown }
        return .cached((id, state))
    }

    public func appAccountTokenUser(_ token: UUID) -> Lookup<String> {
        contents.withLock { $0.tokenUsers[token].map(Lookup.cached) ?? .unknown }
    }

    /// The links of `keys` that exist, in order, when every one of them is known; else `nil`.
    public func links(_ keys: [LinkKey]) -> [ProviderLink]? {
        contents.withLock { contents in
            var found: [ProviderLink] = []
            for key in keys {
                guard let known = contents.links[key] else { return nil }
                if let link = known { found.append(link) }
            }
            return found
        }
    }

    /// Of `keys`, those this transaction does not hold yet, sorted (the order locks are taken in).
    public func unlocked(_ keys: some Collection<String>) -> [String] {
        contents.withLock { contents in
            Set(keys).subtracting(contents.locked).subtracting(contents.lockedInSavepoint).sorted()
        }
    }

    // MARK: Kept current by the StateStore's writes and the pool's savepoints

    public func didLock(_ keys: some Sequence<String>) {
        contents.withLock { contents in
            if contents.isInSavepoint { contents.lockedInSavepoint.formUnion(keys) } else { contents.locked.formUnion(keys) }
        }
    }

    /// `row` was saved (or its save held) as row `id`: a later read finds it as the database
    /// would return it (``EntitlementState/asStored``).
    public func saved(_ row: EntitlementState, id: UUID? = nil) {
        contents.withLock { contents in
            contents.entitlements[row.entityKey] = row.asStored
            contents.entitlementIDs[row.entityKey] = id
        }
    }

    /// `row` was saved (or its save held) as row `id`: a later read finds it as the database would return it.
    public func saved(_ row: TransactionState, id: UUID? = nil) {
        let key = TransactionKey(row.source, row.providerTransactionID, environment: row.environment)
        contents.withLock { contents in
            contents.transactions[key] = row.asStored
            contents.transactionIDs[key] = id
        }
    }

    /// The transactions known here that are, or were, of the entitlement `entitlementKey` or
    /// among `keys`, as they stand (a held save's state; `nil`: known not to exist).
    public func transactions(ofEntitlement entitlementKey: String, orAmong keys: some Sequence<TransactionKey>) -> [TransactionKey: TransactionState?] {
        contents.withLock { contents in
            var known = contents.transactions.filter { $0.value?.entitlementKey == entitlementKey }
            for key in keys { if let row = contents.transactions[key] { known[key] = row } }
            return known
        }
    }

    /// The entitlement's known transactions without a user take `userID`, as the held
    /// assignment (``HeldStateWrite/userAssignment(entitlementKey:userID:)``) will store them.
    public func assignUser(_ userID: String, toTransactionsOf entitlementKey: String) {
        contents.withLock { contents in
            for (key, known) in contents.transactions {
                guard var row = known, row.takeUser(userID, assignedTo: entitlementKey) else { continue }
                contents.transactions[key] = row
            }
        }
    }

    /// Forgets every transaction of an entitlement (their user was assigned in one statement).
    public func forgetTransactions(ofEntitlement entitlementKey: String) {
        contents.withLock { contents in
            contents.transactions = contents.transactions.filter { $0.value?.entitlementKey != entitlementKey }
        }
    }

    /// `links` are about to be saved, in order (``StateStore/save(_:)-([ProviderLink])``): keeps
    /// each known one as the save leaves it (a `nil` field keeps the stored value), and returns
    /// those that must be written — all but the ones known to be stored with every value they carry.
    public func saving(_ links: [ProviderLink]) -> [ProviderLink] {
        contents.withLock { contents in
            links.filter { link in
                let key = LinkKey(link.kind, link.externalID, scope: link.scope)
                guard let known = contents.links[key] else { return true }
                guard let stored = known else {
                    contents.links[key] = link
                    return true
                }
                let merged = stored.completed(by: link)
                contents.links[key] = merged
                return merged != stored
            }
        }
    }

    public func forgetAllLinks() {
        contents.withLock { $0.links = [:] }
    }

    /// Forgets every transaction and link (a user's were given to another in two statements).
    public func forgetAllTransactionsAndLinks() {
        contents.withLock { contents in
            contents.transactions = [:]
            contents.links = [:]
        }
    }

    /// A savepoint opens: the locks taken from now on are its own until it is released.
    public func savepointStarted() {
        contents.withLock { $0.isInSavepoint = true }
    }

    /// The open savepoint was released: its locks are the transaction's now.
    public func savepointReleased() {
        contents.withLock { contents in
            contents.locked.formUnion(contents.lockedInSavepoint)
            contents.lockedInSavepoint = []
            contents.isInSavepoint = false
        }
    }

    /// The open savepoint was rolled back: PostgreSQL released the locks taken in it, and the
    /// rows it saved (kept here as saved) are gone.
    public func savepointRolledBack() {
        contents.withLock { contents in
            contents.lockedInSavepoint = []
            contents.entitlements = [:]
            contents.transactions = [:]
            contents.links = [:]
            // A registration applied in it (which recorded a token's owner) is gone too: the
            // tokens are read again, under their locks (``StateStore/userFollowingAppAccountToken(_:)``).
            contents.tokenUsers = [:]
            contents.isInSavepoint = false
        }
    }
}
