// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing
import TestSupport

@testable import Worker
import PostgresNIO

/// A refund or dispute right behind its payment (Stripe's fraud tools refund within seconds, and
/// Stripe documents no delivery order): the payment's `payment_intent.succeeded` and the chaser's
/// `charge.*` name one payment through two ids. Applied at once by several workers, in both
/// orders, every payment must end with its access off, announced once (issue 36).
@Suite(.timeLimit(.minutes(3)))
struct PaymentChaserRaceTests {
    /// What chases a payment.
    enum Chaser: CaseIterable {
        case refund, dispute

        var type: String { self == .refund ? "charge.refunded" : "charge.dispute.created" }
        var transactionStatus: String { self == .refund ? "refunded" : "disputed" }
        var entitlementStatus: String { self == .refund ? "refunded" : "revoked" }
        var announcement: String { self == .refund ? "entitlement.refunded" : "entitlement.revoked" }

        func object(payment: Int) -> [String: Any] {
            switch self {
            case .refund: StripeObjects.charge("ch_race\(payment)", paymentIntent: "pi_race\(payment)")
            case .dispute: StripeObjects.dispute("dp_race\(payment)", charge: "ch_race\(payment)", paymentIntent: "pi_race\(payment)")
            }
        }
    }

    static let payments = 32

    /// Each payment's chaser was created a second after it; half are posted first. Eight workers
    /// apply them together, each event alone (or in batches, under `SLUICE_TEST_BATCH_SIZE`).
    @Test func everyPaymentChasedByItsRefundOrDisputeEndsWithoutAccess() async throws {
        // A chaser applied before its payment is retried until the payment is there.
        let worker = ["MAX_ATTEMPTS": "50", "RETRY_BASE_SECONDS": "0.02", "RETRY_MAX_SECONDS": "0.05"]
        try await SystemHarness.run(worker: worker) { system in
            let paid = Date().addingTimeInterval(-60).rounded
            for index in 0..<Self.payments {
                let chaser = Chaser.allCases[index % 2]
                let payment = { try await system.stripe(
                    "payment_intent.succeeded",
                    StripeObjects.paymentIntent("pi_race\(index)", user: "user_race\(index)", charge: "ch_race\(index)"), at: paid) }
                let chase = { try await system.stripe(chaser.type, chaser.object(payment: index), at: paid.addingTimeInterval(1)) }
                if index % 4 < 2 {
                    try await payment()
                    try await chase()
                } else {
                    try await chase()
                    try await payment()
                }
            }
            for _ in 0..<200 {
                try await system.drain(workers: 8)
                if try await system.db.scalar("SELECT count(*) FROM events WHERE state NOT IN ('done', 'dead')") == 0 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state <> 'done'") == 0)

            for index in 0..<Self.payments {
                let chaser = Chaser.allCases[index % 2]
                let entitlement = try await system.entitlement(userID: "user_race\(index)")
                #expect(entitlement["status"] as? String == chaser.entitlementStatus, "payment \(index)")
                #expect(entitlement["is_active"] as? Bool == false, "payment \(index)")
                let transaction = try #require(try await system.transactions(userID: "user_race\(index)").first)
                #expect(transaction["status"] as? String == chaser.transactionStatus, "payment \(index)")
                let key = "user_race\(index)"
                #expect(try await system.db.scalar(
                    "SELECT count(*) FROM outgoing_events WHERE user_id = \(key) AND type = \(chaser.announcement)") == 1,
                    "payment \(index): announced once")
                #expect(try await system.db.scalar(
                    "SELECT count(*) FROM outgoing_events WHERE user_id = \(key) AND type = 'entitlement.granted'") == 1,
                    "payment \(index): granted once")
            }
        }
    }
}
