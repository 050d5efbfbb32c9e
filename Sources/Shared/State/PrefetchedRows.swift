// SPDX-License-Identifier: Apache-2.0
public import Foundation
import Synchronization

/// What a batch of events read with one statement per table before any of them is applied, so
/// that each event's handler finds its links, locks and rows in memory instead of asking the
/// database for each (``StateStore`` consults it when it has one).
///
/// The database stays the truth: writes still go to it one event at a time, and each row written
/// is kept as the database now holds it (timestamps rounded to its microseconds), so a later event
/// of the batch finds it in memory; the upsert holds the row's lock until the transaction ends, so
/// nobody else changes it meanwhile. A link already stored with every value is not written at all.
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

    public func loaded(entitlements keys: some Sequence<String>, found: [EntitlementState]) {
        contents.withLock { contents in
            for key in keys { contents.entitlements[key] = .some(nil) }
            for row in found { contents.entitlements[row.entityKey] = row }
        }
    }

    public func loaded(transactions keys: some Sequence<TransactionKey>, found: [TransactionState]) {
        contents.withLock { contents in
            for key in keys { contents.transactions[key] = .some(nil) }
            for row in found {
                contents.transactions[TransactionKey(row.source, row.providerTransactionID, environment: row.environment)] = row
            }
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

    /// `row` was saved: a later read finds it as the database would return it (``EntitlementState/asStored``).
    public func saved(_ row: EntitlementState) {
        contents.withLock { $0.entitlements[row.entityKey] = row.asStored }
    }

    /// `row` was saved: a later read finds it as the database would return it.
    public func saved(_ row: TransactionState) {
        contents.withLock { $0.transactions[TransactionKey(row.source, row.providerTransactionID, environment: row.environment)] = row.asStored }
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
            contents.isInSavepoint = false
        }
    }
}
