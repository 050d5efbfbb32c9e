// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import PostgresNIO
import Testing
import TestSupport

@testable import Shared

/// A batch keeps each row it saved as the database now holds it (``PrefetchedRows``), so a later
/// event of the batch decides from memory exactly what it would have read: every column of a
/// saved entitlement and transaction, read back, equals ``EntitlementState/asStored`` and
/// ``TransactionState/asStored`` — times finer than a microsecond, before 2000 and after, included.
@Suite(.timeLimit(.minutes(3)))
struct StateStoreRoundTripTests {
    /// Times PostgreSQL must round: sub-microsecond, negative since 2000, far ahead.
    static let times = [
        Date(timeIntervalSince1970: 1_764_000_000.123_456_789), Date(timeIntervalSince1970: 946_684_799.999_999_7),
        Date(timeIntervalSince1970: 4_102_444_800.000_000_4), Date(timeIntervalSince1970: 1_700_000_000.5),
    ]

    static func entitlement(_ key: String, at time: Date) -> EntitlementState {
        var e = EntitlementState(
            entityKey: key, userID: "user_1", productID: "pro.monthly", productType: .autoRenewable, source: .storeKit,
            environment: .sandbox, status: .gracePeriod)
        e.email = "a@example.com"
        e.expiresAt = time
        e.purchasedAt = time.addingTimeInterval(-0.000_000_3)
        e.willRenew = false
        e.isTrial = true
        e.trialEndsAt = time.addingTimeInterval(1.000_000_9)
        e.cancelledAt = time.addingTimeInterval(-86_400.25)
        e.gracePeriodExpiresAt = time.addingTimeInterval(0.1)
        e.pendingProductID = "pro.yearly"
        e.offer = "SPRING"
        e.offerType = "promotional"
        e.expirationReason = .billingError
        e.billingIssueDetectedAt = time.addingTimeInterval(-3)
        e.ownership = .familyShared
        e.priceIncreaseStatus = .pending
        e.renewalInfoSignedAt = time.addingTimeInterval(7.7)
        e.lastEventTime = time.addingTimeInterval(0.000_001_5)
        return e
    }

    static func transaction(_ id: String, at time: Date) -> TransactionState {
        var t = TransactionState(source: .webCheckout, providerTransactionID: id, environment: .production, status: .refunded)
        t.entitlementKey = "stripe:payment:\(id)"
        t.userID = "user_1"
        t.productID = "lifetime"
        t.productType = .nonConsumable
        t.amount = 4_999
        t.currency = "eur"
        t.purchasedAt = time
        t.refundedAt = time.addingTimeInterval(60.000_000_6)
        t.amountRefunded = 4_999
        t.periodEnd = time.addingTimeInterval(-0.9)
        t.lastEventTime = time.addingTimeInterval(0.000_000_1)
        return t
    }

    @Test func aSavedRowReadsBackAsItsStoredForm() async throws {
        try await TestDatabase.with { db in
            let logger = TestDatabase.logger
            try await db.client.withTransaction(logger: logger) { connection in
                let store = StateStore(connection: connection, logger: logger)
                // Read back from the database: a store that knows no row.
                func reader() -> StateStore { StateStore(connection: connection, logger: logger) }
                for (index, time) in Self.times.enumerated() {
                    let entitlement = Self.entitlement("apple:sandbox:round-trip-\(index)", at: time)
                    try await store.save(entitlement)
                    try await store.flush()
                    let read = try await reader().entitlement(entitlement.entityKey)
                    #expect(read == entitlement.asStored, "at \(time.timeIntervalSince1970)")
                    // Saved again as read (PostgresNIO's arithmetic may move a time before 2000 by a
                    // microsecond each time): still what the database returns.
                    let again = try #require(read)
                    try await store.save(again)
                    try await store.flush()
                    #expect(try await reader().entitlement(entitlement.entityKey) == again.asStored)

                    let transaction = Self.transaction("pi_round_trip_\(index)", at: time)
                    try await store.save(transaction, eventID: 1)
                    try await store.flush()
                    #expect(try await reader().transaction(.webCheckout, transaction.providerTransactionID, environment: .production) == transaction.asStored)
                }
            }
        }
    }

    /// Within a batch, the saved row is found in memory, equal to what the database returns.
    @Test func aBatchFindsTheRowItSavedAsTheDatabaseHoldsIt() async throws {
        try await TestDatabase.with { db in
            let logger = TestDatabase.logger
            try await db.client.withTransaction(logger: logger) { connection in
                let batch = StateStore(connection: connection, logger: logger)
                let plain = StateStore(connection: connection, logger: logger)
                let entitlement = Self.entitlement("apple:sandbox:in-batch", at: Self.times[0])
                try await batch.save(entitlement)
                guard case let .cached(row) = batch.prefetched.entitlement(entitlement.entityKey) else {
                    Issue.record("the saved row is not kept")
                    return
                }
                try await batch.flush()
                #expect(row == (try await plain.entitlement(entitlement.entityKey)))
            }
        }
    }
}
