// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import DevSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// Google Play end to end against local stand-ins of Google: a push signed by Google's OIDC key
/// reaches ingest, the worker fetches the purchase's state from the Play Developer API, stores it,
/// applies it, and acknowledges the purchase once.
@Suite(.timeLimit(.minutes(3)))
struct PlayLifecycleTests {
    static let month: TimeInterval = 30 * 86_400

    @Test func aSubscriptionsLifeFollowsTheAPIsState() async throws {
        try await PlayHarness.run { play in
            let key = "play:sub-1"
            let start = Date()
            // Purchased: active, the user the app set, acknowledged once.
            play.api.setSubscription("sub-1", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", expiry: start.addingTimeInterval(Self.month), order: "GPA.1", account: "user-1"))
            try await play.push(SamplePlayNotifications.subscription(4, token: "sub-1"))
            try await play.harness.drain()
            var row = try #require(try await play.entitlement(key))
            #expect(row.status == "active")
            #expect(row.product == "pro")
            #expect(row.user == "user-1")
            try await play.acknowledge()
            try await play.acknowledge()
            #expect(play.api.acknowledgements == ["sub-1": 1])

            // Each later state, pushed with the kind Google sends for it: the entitlement is the API's.
            let steps: [(Int, [String: any Sendable], String)] = [
                (2, SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ACTIVE", expiry: start.addingTimeInterval(2 * Self.month), order: "GPA.1..0", acknowledged: true, account: "user-1"), "active"),
                (6, SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD", expiry: start.addingTimeInterval(2 * Self.month + 3 * 86_400), order: "GPA.1..0", acknowledged: true, account: "user-1"), "grace_period"),
                (5, SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ON_HOLD", expiry: start.addingTimeInterval(-60), order: "GPA.1..0", acknowledged: true, account: "user-1"), "past_due"),
                (1, SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ACTIVE", expiry: start.addingTimeInterval(3 * Self.month), order: "GPA.1..1", acknowledged: true, account: "user-1"), "active"),
                (10, SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_PAUSED", expiry: start.addingTimeInterval(3 * Self.month), order: "GPA.1..1", acknowledged: true, account: "user-1"), "paused"),
                (1, SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_ACTIVE", expiry: start.addingTimeInterval(4 * Self.month), order: "GPA.1..2", acknowledged: true, account: "user-1"), "active"),
                (3, SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_CANCELED", expiry: start.addingTimeInterval(4 * Self.month), autoRenew: false, order: "GPA.1..2", acknowledged: true, account: "user-1"), "cancelled"),
                (13, SamplePlayPurchases.subscription(state: "SUBSCRIPTION_STATE_EXPIRED", expiry: start.addingTimeInterval(-1), autoRenew: false, order: "GPA.1..2", acknowledged: true, account: "user-1"), "expired"),
            ]
            for (type, purchase, expected) in steps {
                play.api.setSubscription("sub-1", purchase)
                try await play.push(SamplePlayNotifications.subscription(type, token: "sub-1"))
                try await play.harness.drain()
                row = try #require(try await play.entitlement(key))
                #expect(row.status == expected, "after notification \(type)")
            }
            // Every order is in the ledger, in minor units.
            let orders: [String] = try await play.harness.db.client.query(
                "SELECT provider_transaction_id FROM transactions WHERE source = 'play_store' ORDER BY 1", logger: TestDatabase.logger
            ).decode(String.self).reduce(into: []) { $0.append($1) }
            #expect(orders == ["GPA.1", "GPA.1..0", "GPA.1..1", "GPA.1..2"])
            #expect(try await play.harness.db.scalar("SELECT amount FROM transactions WHERE provider_transaction_id = 'GPA.1'") == 699 as Int64)
            #expect(play.api.acknowledgements == ["sub-1": 1])
        }
    }

    @Test func aRevokedSubscriptionIsRevoked() async throws {
        try await PlayHarness.run { play in
            play.api.setSubscription("sub-r", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Date().addingTimeInterval(Self.month), acknowledged: true, account: "user-r"))
            try await play.push(SamplePlayNotifications.subscription(4, token: "sub-r"))
            try await play.harness.drain()
            play.api.setSubscription("sub-r", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_EXPIRED", expiry: Date().addingTimeInterval(-1), autoRenew: false, acknowledged: true, account: "user-r"))
            try await play.push(SamplePlayNotifications.subscription(12, token: "sub-r"))
            try await play.harness.drain()
            #expect(try await play.entitlement("play:sub-r")?.status == "revoked")
        }
    }

    @Test func theSamePushThreeTimesAtOnceAppliesOnce() async throws {
        try await PlayHarness.run { play in
            play.api.setSubscription("sub-3", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Date().addingTimeInterval(Self.month), account: "user-3"))
            let notification = SamplePlayNotifications.subscription(4, token: "sub-3")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<3 { group.addTask { try await play.push(notification, messageID: "777") } }
                try await group.waitForAll()
            }
            try await play.harness.drain(workers: 3)
            #expect(try await play.harness.db.scalar("SELECT count(*) FROM events WHERE source = 'play'") == 1 as Int64)
            #expect(try await play.harness.db.scalar("SELECT count(*) FROM events WHERE source = 'play_purchase'") == 1 as Int64)
            #expect(try await play.harness.db.scalar("SELECT count(*) FROM entitlements") == 1 as Int64)
            try await play.acknowledge()
            #expect(play.api.acknowledgements == ["sub-3": 1])
        }
    }

    @Test func anUpgradeMovesTheEntitlementWithoutEndingIt() async throws {
        try await PlayHarness.run { play in
            play.api.setSubscription("old", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", product: "pro", expiry: Date().addingTimeInterval(Self.month), order: "GPA.old", acknowledged: true, account: "user-u"))
            try await play.push(SamplePlayNotifications.subscription(4, token: "old"))
            try await play.harness.drain()
            // The upgrade: a new token naming the old; Google marks the old one expired.
            play.api.setSubscription("new", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", product: "pro.yearly", expiry: Date().addingTimeInterval(12 * Self.month), order: "GPA.new",
                account: "user-u", linkedPurchaseToken: "old"))
            play.api.setSubscription("old", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_EXPIRED", product: "pro", expiry: Date().addingTimeInterval(-1), autoRenew: false, order: "GPA.old",
                acknowledged: true, account: "user-u"))
            try await play.push(SamplePlayNotifications.subscription(4, token: "new"))
            try await play.harness.drain()
            try await play.push(SamplePlayNotifications.subscription(13, token: "old"))
            try await play.harness.drain()
            let row = try #require(try await play.entitlement("play:old"))
            #expect(row.status == "active")
            #expect(row.product == "pro.yearly")
            #expect(try await play.harness.db.scalar("SELECT count(*) FROM entitlements") == 1 as Int64)
            #expect(try await play.harness.db.scalar(
                "SELECT count(*) FROM outgoing_events WHERE type = 'entitlement.expired'") == 0 as Int64)
            try await play.acknowledge()
            #expect(play.api.acknowledgements == ["new": 1])
        }
    }

    @Test func aOneTimeProductIsGrantedAndItsVoidRevokesIt() async throws {
        try await PlayHarness.run { play in
            play.api.setProduct("p-1", SamplePlayPurchases.product("coins.lifetime", order: "GPA.p1", account: "user-p"))
            try await play.push(SamplePlayNotifications.oneTimeProduct(1, token: "p-1", sku: "coins.lifetime"))
            try await play.harness.drain()
            #expect(try await play.entitlement("play:p-1")?.status == "active")
            try await play.acknowledge()
            #expect(play.api.acknowledgements == ["p-1": 1])
            try await play.push(SamplePlayNotifications.voided(token: "p-1", orderID: "GPA.p1", productType: 2))
            try await play.harness.drain()
            #expect(try await play.entitlement("play:p-1")?.status == "refunded")
            #expect(try await play.text("SELECT status FROM transactions WHERE provider_transaction_id = 'GPA.p1'") == "refunded")
        }
    }

    /// A one-time purchase's amount is what its `Order` (the Orders API) says the buyer paid,
    /// fetched with its state; a base-price subscription's is its plan's price, with no `Order`
    /// asked; an Orders API that refuses (no "View financial data") leaves the amount unknown and
    /// the purchase granted all the same.
    @Test func anOrdersAmountComesFromTheOrdersAPIWhereTheStateHasNone() async throws {
        try await PlayHarness.run { play in
            /// A one-time purchase of 4.99 with its `Order`, pushed and applied.
            func buy(_ token: String, order: String) async throws {
                play.api.setProduct(token, SamplePlayPurchases.product("coins.lifetime", order: order, account: "user-o"))
                play.api.setOrder(SamplePlayPurchases.order(order, token: token, product: "coins.lifetime", total: ("EUR", "4", 990_000_000)))
                try await play.push(SamplePlayNotifications.oneTimeProduct(1, token: token, sku: "coins.lifetime"))
                try await play.harness.drain()
                #expect(try await play.entitlement("play:" + token)?.status == "active")
            }
            try await buy("p-o", order: "GPA.o1")
            #expect(try await play.text("SELECT concat_ws(' ', amount, currency) FROM transactions WHERE provider_transaction_id = 'GPA.o1'") == "499 EUR")
            #expect(play.api.orderRequests == 1)

            play.api.setSubscription("s-o", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Date().addingTimeInterval(Self.month), order: "GPA.o2", account: "user-o"))
            try await play.push(SamplePlayNotifications.subscription(4, token: "s-o"))
            try await play.harness.drain()
            #expect(try await play.text("SELECT concat_ws(' ', amount, currency) FROM transactions WHERE provider_transaction_id = 'GPA.o2'") == "699 EUR")
            #expect(play.api.orderRequests == 1, "a base-price order's amount is in its state")

            // An introductory price: the state says none; the Order's line item does (1.49).
            play.api.setSubscription("s-i", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Date().addingTimeInterval(Self.month), order: "GPA.o4", account: "user-o",
                phase: "introductoryPrice"))
            play.api.setOrder(SamplePlayPurchases.order("GPA.o4", token: "s-i", product: "pro", total: ("EUR", "1", 490_000_000)))
            try await play.push(SamplePlayNotifications.subscription(4, token: "s-i"))
            try await play.harness.drain()
            #expect(try await play.text("SELECT concat_ws(' ', amount, currency) FROM transactions WHERE provider_transaction_id = 'GPA.o4'") == "149 EUR")
            #expect(play.api.orderRequests == 2)

            play.api.forbidOrders()
            try await buy("p-f", order: "GPA.o3")
            #expect(try await play.text("SELECT coalesce(amount::text, 'unknown') FROM transactions WHERE provider_transaction_id = 'GPA.o3'") == "unknown")
            #expect(play.api.orderRequests == 3)
        }
    }

    /// An Orders API that hangs is given up at the handler's time limit, the state stored
    /// without its `Order` (here 0.3 s against a 10 s hang: under a loaded run the 0.3 s have taken
    /// 2 s, so the bound is far from both); a shutdown during the fetch is passed on, so that the
    /// push is tried again rather than stored without it.
    @Test func aHungOrdersAPIIsGivenUpAndAShutdownPassedOn() async throws {
        try await PlayHarness.run { play in
            play.api.setOrder(SamplePlayPurchases.order("GPA.h", token: "p-h", product: "coins", total: ("EUR", "1", 0)))
            play.api.hangOrders(for: .seconds(10))
            let answer = ByteBuffer(data: try JSONSerialization.data(withJSONObject: SamplePlayPurchases.product("coins", order: "GPA.h")))
            let api = try play.playAPI()
            let fetch = { @Sendable (limit: Duration) in
                try await PlayNotificationHandler.order(
                    of: answer, kind: .product, packageName: SamplePlayNotifications.packageName, api: api, timeLimit: limit, logger: TestDatabase.logger)
            }
            let started = ContinuousClock.now
            #expect(try await fetch(.milliseconds(300)) == nil)
            #expect(started.duration(to: .now) < .seconds(8), "given up at its limit, not after the hang")

            await #expect(throws: CancellationError.self) {
                try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
                    group.addTask { try await fetch(.seconds(30)) }
                    try await Task.sleep(for: .milliseconds(200))
                    group.cancelAll()
                    _ = try await group.next()
                }
            }
        }
    }

    @Test func aPendingPurchaseGrantsNothingUntilPaid() async throws {
        try await PlayHarness.run { play in
            play.api.setProduct("p-2", SamplePlayPurchases.product("coins.lifetime", state: 2, account: "user-q"))
            try await play.push(SamplePlayNotifications.oneTimeProduct(1, token: "p-2", sku: "coins.lifetime"))
            try await play.harness.drain()
            #expect(try await play.entitlement("play:p-2") == nil)
            try await play.acknowledge()
            #expect(play.api.acknowledgements.isEmpty)
            play.api.setProduct("p-2", SamplePlayPurchases.product("coins.lifetime", state: 0, account: "user-q"))
            try await play.push(SamplePlayNotifications.oneTimeProduct(1, token: "p-2", sku: "coins.lifetime"))
            try await play.harness.drain()
            #expect(try await play.entitlement("play:p-2")?.status == "active")
        }
    }

    @Test func aTestPurchaseIsSandbox() async throws {
        try await PlayHarness.run { play in
            play.api.setSubscription("t-1", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Date().addingTimeInterval(Self.month), account: "user-t", test: true))
            try await play.push(SamplePlayNotifications.subscription(4, token: "t-1"))
            try await play.harness.drain()
            #expect(try await play.entitlement("play:sandbox:t-1")?.status == "active")
            #expect(try await play.text("SELECT environment FROM entitlements") == "sandbox")
        }
    }

    @Test func aFailedAcknowledgementIsRetriedUntilGoogleTakesIt() async throws {
        try await PlayHarness.run { play in
            play.api.setSubscription("sub-f", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Date().addingTimeInterval(Self.month), account: "user-f"))
            try await play.push(SamplePlayNotifications.subscription(4, token: "sub-f"))
            try await play.harness.drain()
            play.api.failAcknowledgements(10)
            try await play.acknowledge()
            #expect(play.api.acknowledgements.isEmpty)
            #expect(try await play.harness.db.scalar("SELECT attempts::bigint FROM play_acknowledgements") == 1 as Int64)
            play.api.failAcknowledgements(0)
            try await play.harness.db.client.query("UPDATE play_acknowledgements SET next_attempt_at = now()", logger: TestDatabase.logger)
            try await play.acknowledge()
            #expect(play.api.acknowledgements == ["sub-f": 1])
        }
    }

    /// A worker stopped after Google took the acknowledgement and before it was recorded: the next
    /// attempt is refused (`400 invalidPurchaseState`), and the purchase, asked, says it is acknowledged.
    @Test func anAcknowledgementGoogleTookBeforeAStopIsRecognised() async throws {
        try await PlayHarness.run { play in
            play.api.setSubscription("sub-k", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Date().addingTimeInterval(Self.month), account: "user-k"))
            try await play.push(SamplePlayNotifications.subscription(4, token: "sub-k"))
            try await play.harness.drain()
            // Google took it, the worker never recorded it.
            try await play.playAPI().acknowledge(packageName: SamplePlayNotifications.packageName, kind: .subscription, productID: "pro", token: "sub-k")
            try await play.acknowledge()
            #expect(play.api.acknowledgements == ["sub-k": 1])
            #expect(play.api.acknowledgementRequests == ["sub-k": 2])
            #expect(try await play.text("SELECT acknowledged_at::text FROM play_acknowledgements") != nil)
        }
    }

    /// The old token's late state fetched after the new token's, and applied first: the upgrade
    /// still moves the entitlement (its state is not stale), with no expiry, and is acknowledged.
    @Test func anUpgradeAppliedAfterItsPredecessorsLaterStateIsNotStale() async throws {
        try await PlayHarness.run { play in
            play.api.setSubscription("old-r", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", product: "pro", expiry: Date().addingTimeInterval(Self.month), order: "GPA.or", acknowledged: true, account: "user-o"))
            try await play.push(SamplePlayNotifications.subscription(4, token: "old-r"))
            try await play.harness.drain()
            play.api.setSubscription("new-r", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", product: "pro.yearly", expiry: Date().addingTimeInterval(12 * Self.month), order: "GPA.nr",
                account: "user-o", linkedPurchaseToken: "old-r"))
            let canceled = SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_CANCELED", product: "pro", expiry: Date().addingTimeInterval(Self.month), autoRenew: false, order: "GPA.or",
                acknowledged: true, account: "user-o")
            // The new token's state is fetched first, the old one's after, and the old one's applied first.
            try await play.push(SamplePlayNotifications.subscription(4, token: "new-r"), messageID: "m-new")
            let newJob = try await play.harness.pool.queue.dequeue(limit: 1, owner: "test-new")
            try #require(newJob.count == 1)
            await play.harness.pool.execute(newJob[0])  // stores the new token's state, fetched now
            try await play.harness.db.client.query(
                "UPDATE events SET run_at = now() + interval '1 hour' WHERE source = 'play_purchase' AND external_id = 'push:m-new'",
                logger: TestDatabase.logger)
            // The old token's state, fetched later, applied first.
            play.api.setSubscription("old-r", canceled)
            try await play.push(SamplePlayNotifications.subscription(3, token: "old-r"), messageID: "m-old")
            try await play.harness.drain()
            #expect(try await play.entitlement("play:old-r")?.status == "cancelled")
            try await play.harness.db.client.query("UPDATE events SET run_at = now() WHERE external_id = 'push:m-new'", logger: TestDatabase.logger)
            try await play.harness.drain()
            let row = try #require(try await play.entitlement("play:old-r"))
            #expect(row.status == "active")
            #expect(row.product == "pro.yearly")
            #expect(try await play.harness.db.scalar("SELECT count(*) FROM outgoing_events WHERE type = 'entitlement.expired'") == 0)
            try await play.acknowledge()
            #expect(play.api.acknowledgements == ["new-r": 1])
        }
    }

    /// A purchase that stopped being one to acknowledge before it was (refunded, expired): Google
    /// refuses, the purchase says so, and the acknowledgement is given up, not retried forever.
    @Test func anAcknowledgementOfAPurchaseNoLongerPaidIsGivenUp() async throws {
        try await PlayHarness.run { play in
            play.api.setSubscription("sub-g", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Date().addingTimeInterval(Self.month), account: "user-g"))
            try await play.push(SamplePlayNotifications.subscription(4, token: "sub-g"))
            try await play.harness.drain()
            play.api.setSubscription("sub-g", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_EXPIRED", expiry: Date().addingTimeInterval(-60), autoRenew: false, account: "user-g"))
            try await play.acknowledge()
            #expect(play.api.acknowledgements.isEmpty)
            #expect(try await play.text("SELECT last_error FROM play_acknowledgements WHERE given_up_at IS NOT NULL")
                == "the subscription is SUBSCRIPTION_STATE_EXPIRED")
            // Given up: not asked again.
            try await play.harness.db.client.query("UPDATE play_acknowledgements SET next_attempt_at = now()", logger: TestDatabase.logger)
            try await play.acknowledge()
            #expect(play.api.acknowledgementRequests == ["sub-g": 1])
        }
    }
}
