// SPDX-License-Identifier: Apache-2.0
@testable import Apply
import Foundation
import Synchronization
import Testing

@testable import Shared

/// ``PrefetchedRows``: what a batch loaded ahead is found in memory until a write changes it, and
/// a rolled-back savepoint takes its locks with it.
struct PrefetchedRowsTests {
    typealias Link = PrefetchedRows.LinkKey
    typealias TransactionKey = PrefetchedRows.TransactionKey

    static func entitlement(_ key: String) -> EntitlementState {
        EntitlementState(entityKey: key, userID: "u", productID: "pro", productType: .autoRenewable, source: .webCheckout, status: .active)
    }

    static func isUnknown<Row>(_ lookup: PrefetchedRows.Lookup<Row>) -> Bool {
        if case .unknown = lookup { true } else { false }
    }

    static func cached<Row>(_ lookup: PrefetchedRows.Lookup<Row>) -> Row?? {
        if case let .cached(row) = lookup { .some(row) } else { nil }
    }

    @Test func loadedRowsAreFoundAbsentOnesAreKnownAbsentOthersMustBeRead() {
        let rows = PrefetchedRows()
        rows.loaded(entitlements: ["a", "b"], found: [Self.entitlement("a")])
        #expect(Self.cached(rows.entitlement("a"))??.entityKey == "a")
        #expect(Self.cached(rows.entitlement("b")) == .some(nil), "loaded, none stored")
        #expect(Self.isUnknown(rows.entitlement("c")), "never loaded")

        let paid = TransactionKey(.webCheckout, "pi_1", environment: .production)
        let sandbox = TransactionKey(.webCheckout, "pi_1", environment: .sandbox)
        rows.loaded(transactions: [paid, sandbox], found: [TransactionState(source: .webCheckout, providerTransactionID: "pi_1", status: .succeeded)])
        #expect(Self.cached(rows.transaction(paid))??.status == .succeeded)
        #expect(Self.cached(rows.transaction(sandbox)) == .some(nil), "another environment's id is another row")
    }

    /// Columns: links loaded, links asked, what memory answers (`nil`: read them from the database).
    @Test(arguments: [
        ([Link(.stripeCustomer, "cus_1", scope: "")], [Link(.stripeCustomer, "cus_1", scope: "")], ["cus_1"]),
        ([Link(.stripeCustomer, "cus_1", scope: "")], [Link(.stripeCustomer, "cus_1", scope: "test:")], nil),
        ([Link(.stripeCharge, "ch_1", scope: ""), Link(.stripeCustomer, "cus_1", scope: "")],
         [Link(.stripeCharge, "ch_1", scope: ""), Link(.stripeCustomer, "cus_1", scope: "")], ["cus_1"]),
        ([Link(.stripeCustomer, "cus_1", scope: "")], [Link(.stripeCustomer, "cus_1", scope: ""), Link(.stripeCharge, "ch_2", scope: "")], nil),
        ([], [], []),
    ] as [([Link], [Link], [String]?)])
    func linksAreAnsweredFromMemoryOnlyWhenEveryOneIsKnown(loaded: [Link], asked: [Link], answer: [String]?) {
        let rows = PrefetchedRows()
        rows.loaded(links: loaded, found: [ProviderLink(.stripeCustomer, "cus_1", userID: "u")])
        #expect(rows.links(asked)?.map(\.externalID) == answer)
    }

    /// A saved row is kept as the database holds it; one whose user was assigned in bulk must be read again.
    @Test func aWriteKeepsWhatItSavedOrForgetsWhatItChangedInBulk() {
        let rows = PrefetchedRows()
        let paid = TransactionKey(.webCheckout, "pi_1", environment: .production)
        var transaction = TransactionState(source: .webCheckout, providerTransactionID: "pi_1", status: .succeeded)
        transaction.entitlementKey = "a"
        let link = Link(.stripeCustomer, "cus_1", scope: "")
        rows.loaded(entitlements: ["a", "b"], found: [Self.entitlement("a"), Self.entitlement("b")])
        rows.loaded(transactions: [paid], found: [transaction])
        rows.loaded(links: [link], found: [])

        var saved = Self.entitlement("a")
        saved.expiresAt = Date(timeIntervalSince1970: 1_764_000_000.123_456_789)
        rows.saved(saved)
        #expect(Self.cached(rows.entitlement("a"))??.expiresAt == saved.asStored.expiresAt, "as the database holds it")
        #expect(saved.asStored.expiresAt != saved.expiresAt, "rounded to microseconds")
        rows.saved(transaction)
        #expect(Self.cached(rows.transaction(paid)) == .some(transaction.asStored))
        rows.forgetTransactions(ofEntitlement: "b")
        #expect(!Self.isUnknown(rows.transaction(paid)), "another entitlement's transactions stay")
        rows.forgetTransactions(ofEntitlement: "a")
        #expect(Self.isUnknown(rows.transaction(paid)))
        rows.forgetAllTransactionsAndLinks()
        #expect(rows.links([link]) == nil)
    }

    /// A saved link is kept as `sluice_save_links` leaves it; one stored with every value it carries is not written.
    @Test func savedLinksAreKeptAsSavedAndOnlyChangesAreWritten() {
        let rows = PrefetchedRows()
        let customer = Link(.stripeCustomer, "cus_1", scope: "")
        let charge = Link(.stripeCharge, "ch_1", scope: "")
        let unknown = ProviderLink(.stripeInvoice, "in_1", transactionKey: "in_1")
        rows.loaded(links: [customer, charge], found: [ProviderLink(.stripeCustomer, "cus_1", userID: "u", account: "acct_1")])

        let same = ProviderLink(.stripeCustomer, "cus_1", userID: "u")
        #expect(rows.saving([same]) == [], "stored with every value it carries")
        let moved = ProviderLink(.stripeCustomer, "cus_1", userID: "v")
        let new = ProviderLink(.stripeCharge, "ch_1", entitlementKey: "e")
        #expect(rows.saving([moved, new, unknown]) == [moved, new, unknown])
        #expect(rows.links([customer, charge]) == [
            ProviderLink(.stripeCustomer, "cus_1", userID: "v", account: "acct_1"), ProviderLink(.stripeCharge, "ch_1", entitlementKey: "e"),
        ], "a nil field keeps the stored value")
        #expect(rows.links([Link(.stripeInvoice, "in_1", scope: "")]) == nil, "never loaded: still unknown")

        rows.loaded(entitlements: ["a"], found: [Self.entitlement("a")])
        rows.savepointStarted()
        rows.savepointRolledBack()
        #expect(rows.links([customer]) == nil, "a rolled-back savepoint's saves are gone: read again")
        #expect(Self.isUnknown(rows.entitlement("a")))
    }

    /// PostgreSQL releases the advisory locks taken inside a savepoint that is rolled back
    /// (checked by `BatchApplyTests`); those taken outside, or in a released one, stay held.
    @Test func locksTakenInARolledBackSavepointMustBeTakenAgain() {
        let rows = PrefetchedRows()
        rows.didLock(["b", "a"])
        #expect(rows.unlocked(["c", "a", "b"]) == ["c"])

        rows.savepointStarted()
        rows.didLock(["c"])
        #expect(rows.unlocked(["c", "d"]) == ["d"])
        rows.savepointRolledBack()
        #expect(rows.unlocked(["d", "c", "a"]) == ["c", "d"], "sorted: the order locks are taken in")

        rows.savepointStarted()
        rows.didLock(["c"])
        rows.savepointReleased()
        rows.savepointStarted()
        rows.savepointRolledBack()
        #expect(rows.unlocked(["c"]) == [], "released with its savepoint: the transaction's now")
    }

    @Test func aPayloadIsDecodedOncePerBatch() throws {
        let rows = PrefetchedRows()
        let decodes = Mutex(0)
        func decode() -> String {
            decodes.withLock { $0 += 1 }
            return "decoded"
        }
        #expect(rows.payload(of: 7, decode) == "decoded")
        #expect(rows.payload(of: 7, decode) == "decoded")
        #expect(decodes.withLock { $0 } == 1)
        #expect(rows.payload(of: 8, decode) == "decoded")
        #expect(decodes.withLock { $0 } == 2, "another job's payload is its own")
        struct Malformed: Error {}
        #expect(throws: Malformed.self) { try rows.payload(of: 9) { () throws -> String in throw Malformed() } }
    }
}
