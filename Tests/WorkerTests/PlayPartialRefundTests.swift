// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// Google Play's quantity-based partial refund of a purchase of several (docs/google-play.md):
/// neither the push nor the listing says how many were refunded in all; the purchase's state,
/// fetched after the void, does, and the refunded share of the currencies granted is taken back.
@Suite(.timeLimit(.minutes(3)))
struct PlayPartialRefundTests {
    static let pack = CatalogProduct(id: "coins.pack", type: .consumable, playProductIDs: ["coins.pack"], currencyGrants: ["coins": 100])

    static func coins(_ play: PlayHarness, _ user: String) async throws -> Int64 {
        try await BalanceStore(client: play.harness.db.client, logger: TestDatabase.logger).balances(user: user)["coins"] ?? 0
    }

    /// `quantity` of `coins.pack` bought at once by `user` as purchase `token`, pushed and applied.
    static func bought(_ play: PlayHarness, token: String, order: String, user: String, quantity: Int) async throws {
        _ = try await CatalogStore(client: play.harness.db.client, logger: TestDatabase.logger).add(Self.pack)
        play.api.setProduct(token, SamplePlayPurchases.product("coins.pack", order: order, account: user, quantity: quantity))
        try await play.push(SamplePlayNotifications.oneTimeProduct(1, token: token, sku: "coins.pack"))
        try await play.harness.drain()
    }

    @Test func aRefundOfOneOfThreeTakesBackAThirdOnceAndTheAccessStays() async throws {
        try await PlayHarness.run { play in
            try await Self.bought(play, token: "pq-1", order: "GPA.q1", user: "user-q", quantity: 3)
            #expect(try await Self.coins(play, "user-q") == 300)

            // One of the three refunded: Google's state now has two refundable. The push comes three
            // times (twice as one Pub/Sub message, once as another), all at once.
            play.api.setProduct("pq-1", SamplePlayPurchases.product("coins.pack", order: "GPA.q1", account: "user-q", quantity: 3, refunded: 1))
            let first = Date()
            let void = SamplePlayNotifications.voided(token: "pq-1", orderID: "GPA.q1", productType: 2, refundType: 2, at: first)
            let message = UUID().uuidString
            try await withThrowingTaskGroup(of: Void.self) { group in
                for id in [message, message, UUID().uuidString] { group.addTask { try await play.push(void, messageID: id) } }
                try await group.waitForAll()
            }
            try await play.harness.drain()
            #expect(try await Self.coins(play, "user-q") == 200)
            #expect(try await play.text("SELECT quantity_refunded::text FROM transactions WHERE provider_transaction_id = 'GPA.q1'") == "1")
            #expect(try await play.entitlement("play:pq-1")?.status == "active")
            // Announced once as transaction.refunded, and read so: one of three.
            let announced = try #require(try await play.text(
                "SELECT string_agg(convert_from(payload, 'UTF8'), ',') FROM outgoing_events WHERE type = 'transaction.refunded'"))
            let event = try #require(try JSONSerialization.jsonObject(with: Data(announced.utf8)) as? [String: Any])
            let data = try #require(event["data"] as? [String: Any])
            let refunded = try #require(data["transaction"] as? [String: Any])
            #expect(refunded["quantity"] as? Int == 3 && refunded["quantity_refunded"] as? Int == 1 && refunded["status"] as? String == "succeeded")
            #expect((data["previous"] as? [String: Any])?["quantity_refunded"] is NSNull)
            let history = try await play.harness.read("/v1/iap/transaction-history?user_id=user-q", key: "transactions")
            #expect(history.map { $0["quantity_refunded"] as? Int } == [1])

            // A second one refunded later, found only by listing voids: another third.
            play.api.setProduct("pq-1", SamplePlayPurchases.product("coins.pack", order: "GPA.q1", account: "user-q", quantity: 3, refunded: 2))
            play.api.addVoided([
                "kind": "androidpublisher#voidedPurchase", "purchaseToken": "pq-1", "orderId": "GPA.q1",
                "purchaseTimeMillis": "1468825200000", "voidedTimeMillis": String(Int64(Date().addingTimeInterval(1).timeIntervalSince1970 * 1_000)),
                "voidedSource": 0, "voidedReason": 1, "voidedQuantity": 1,
            ])
            let recovery = PlayRecovery(
                api: try play.playAPI(), packageNames: [SamplePlayNotifications.packageName],
                store: RecoveredEventStore(client: play.harness.db.client, logger: TestDatabase.logger))
            let report = try await recovery.recover(from: Date().addingTimeInterval(-3_600), to: Date().addingTimeInterval(60), dryRun: false, logger: TestDatabase.logger)
            #expect(report == RecoveryReport(found: 1, stored: 1, statesFetched: 1))
            try await play.harness.drain()
            #expect(try await Self.coins(play, "user-q") == 100)
            // Listed again: nothing fetched or taken again.
            let again = try await recovery.recover(from: Date().addingTimeInterval(-3_600), to: Date().addingTimeInterval(60), dryRun: false, logger: TestDatabase.logger)
            #expect(again == RecoveryReport(found: 1, alreadyStored: 1))
            try await play.harness.drain()
            #expect(try await Self.coins(play, "user-q") == 100)
            #expect(try await play.harness.db.scalar(
                "SELECT count(*) FROM balance_transactions WHERE user_id = 'user-q' AND cause = 'refund'") == 2)
            // One state fetched after each refund: the pushes and the second listing fetched no more.
            #expect(try await play.harness.db.scalar("SELECT count(*) FROM events WHERE external_id LIKE 'after:%'") == 2)
        }
    }

    /// A purchase's state fetched before the refund (the app's sync) and not applied yet when
    /// the partial refund's void is handled: no entitlement knows the token, so the product is
    /// read from the waiting row, and the state fetched after the void takes the share back.
    @Test func aRefundHandledBeforeTheFirstStateIsAppliedIsStillTaken() async throws {
        try await PlayHarness.run { play in
            _ = try await CatalogStore(client: play.harness.db.client, logger: TestDatabase.logger).add(Self.pack)
            play.api.setProduct("pq-3", SamplePlayPurchases.product("coins.pack", order: "GPA.q3", account: "user-w", quantity: 3))
            #expect(try await play.sync(["purchase_token": "pq-3", "product_id": "coins.pack", "user_id": "user-w"]).status == .accepted)
            // Its worker is slow: the state row waits while the void is handled.
            try await play.harness.db.client.query(
                "UPDATE events SET run_at = now() + interval '1 hour' WHERE source = 'play_purchase'", logger: TestDatabase.logger)
            play.api.setProduct("pq-3", SamplePlayPurchases.product("coins.pack", order: "GPA.q3", account: "user-w", quantity: 3, refunded: 1))
            try await play.push(SamplePlayNotifications.voided(token: "pq-3", orderID: "GPA.q3", productType: 2, refundType: 2))
            try await play.harness.drain()
            #expect(try await play.harness.db.scalar("SELECT count(*) FROM events WHERE external_id LIKE 'after:%'") == 1)

            try await play.harness.db.client.query("UPDATE events SET run_at = now() WHERE state = 'pending'", logger: TestDatabase.logger)
            try await play.harness.drain()
            #expect(try await Self.coins(play, "user-w") == 200, "three granted, one taken back")
            #expect(try await play.text("SELECT quantity_refunded::text FROM transactions WHERE provider_transaction_id = 'GPA.q3'") == "1")
        }
    }

    /// Google refusing to say the purchase's state after a partial refund (a `4xx`) does not stop
    /// the void itself from being stored and applied, nor leave the push failing forever.
    @Test func googleRefusingTheStateStillStoresTheVoid() async throws {
        try await PlayHarness.run { play in
            try await Self.bought(play, token: "pq-2", order: "GPA.q2", user: "user-s", quantity: 2)
            #expect(try await Self.coins(play, "user-s") == 200)
            // Google now answers 400 purchaseTokenDoesNotMatchProductId for the product Sluice knows.
            play.api.setProduct("pq-2", SamplePlayPurchases.product("coins.other", order: "GPA.q2", account: "user-s", quantity: 2, refunded: 1))
            try await play.push(SamplePlayNotifications.voided(token: "pq-2", orderID: "GPA.q2", productType: 2, refundType: 2))
            try await play.harness.drain()
            #expect(try await play.harness.db.scalar(
                "SELECT count(*) FROM events WHERE source = 'play_purchase' AND type = 'VOIDED_PURCHASE' AND state = 'done'") == 1)
            #expect(try await play.harness.db.scalar("SELECT count(*) FROM events WHERE state <> 'done'") == 0)
            #expect(try await Self.coins(play, "user-s") == 200)
        }
    }
}
