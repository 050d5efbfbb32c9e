// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// Google Play beyond the pushes: the app's sync of a purchase token, voided purchases found only
/// by listing them, reconciliation, and one access level across the stores.
@Suite(.timeLimit(.minutes(3)))
struct PlayAppSideTests {
    static let month: TimeInterval = 30 * 86_400

    @Test func anAppsSyncIsVerifiedWithGoogleAndAppliedForItsUser() async throws {
        try await PlayHarness.run { play in
            play.api.setSubscription("tok-s", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", product: "pro", expiry: Date().addingTimeInterval(Self.month), order: "GPA.s"))
            let body: [String: any Sendable] = ["purchase_token": "tok-s", "product_id": "pro", "user_id": "acct_1042"]
            #expect(try await play.sync(body).status == .accepted)
            #expect(try await play.sync(body).status == .ok)
            try await play.harness.drain()
            let row = try #require(try await play.entitlement("play:tok-s"))
            #expect(row.status == "active")
            #expect(row.user == "acct_1042")
            let entitlements = try await play.harness.entitlements(userID: "acct_1042")
            #expect(entitlements.first?["source"] as? String == "play_store")
            try await play.acknowledge()
            #expect(play.api.acknowledgements == ["tok-s": 1])
        }
    }

    @Test func aSyncThatGoogleContradictsIsRefusedAndStoresNothing() async throws {
        try await PlayHarness.run { play in
            play.api.setSubscription("tok-u", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", product: "pro", expiry: Date().addingTimeInterval(Self.month), account: "acct_owner"))
            play.api.setProduct("tok-p", SamplePlayPurchases.product("coins.lifetime"))
            let cases: [([String: any Sendable], Int, String)] = [
                (["purchase_token": "tok-u", "product_id": "pro", "user_id": "acct_thief"], 409, "user_mismatch"),
                (["purchase_token": "tok-u", "product_id": "pro.yearly", "user_id": "acct_owner"], 409, "product_mismatch"),
                // Google answers a token of another product 400 purchaseTokenDoesNotMatchProductId.
                (["purchase_token": "tok-p", "product_id": "gems.big", "user_id": "acct_owner", "type": "product"], 404, "purchase_not_found"),
                (["purchase_token": "tok-none", "product_id": "pro", "user_id": "acct_owner"], 404, "purchase_not_found"),
                (["purchase_token": "tok-u", "product_id": "pro", "user_id": "acct\u{1B}x"], 400, "malformed"),
                (["purchase_token": "tok-u", "product_id": "pro", "user_id": "acct_owner", "package_name": "com.attacker"], 401, "wrong_package"),
                (["purchase_token": "tok-u", "user_id": "acct_owner"], 400, "malformed"),
            ]
            for (body, status, code) in cases {
                let response = try await play.sync(body)
                #expect(Int(response.status.code) == status, "\(body)")
                #expect(PlayHarness.errorCode(response) == code, "\(body)")
            }
            #expect(try await play.harness.db.scalar("SELECT count(*) FROM events") == 0)
            // The owner's own sync is taken.
            #expect(try await play.sync(["purchase_token": "tok-u", "product_id": "pro", "user_id": "acct_owner"]).status == .accepted)
        }
    }

    @Test func aVoidFoundOnlyByListingItRevokes() async throws {
        try await PlayHarness.run { play in
            play.api.setProduct("tok-v", SamplePlayPurchases.product("coins.lifetime", order: "GPA.v", acknowledged: true, account: "acct_v"))
            try await play.push(SamplePlayNotifications.oneTimeProduct(1, token: "tok-v", sku: "coins.lifetime"))
            try await play.harness.drain()
            #expect(try await play.entitlement("play:tok-v")?.status == "active")
            // Google voided it; its push never came.
            play.api.addVoided([
                "kind": "androidpublisher#voidedPurchase", "purchaseToken": "tok-v", "orderId": "GPA.v",
                "purchaseTimeMillis": "1468825200000", "voidedTimeMillis": String(Int64(Date().timeIntervalSince1970 * 1_000)),
                "voidedSource": 0, "voidedReason": 1,
            ])
            let recovery = PlayRecovery(
                api: try play.playAPI(), packageNames: [SamplePlayNotifications.packageName],
                store: RecoveredEventStore(client: play.harness.db.client, logger: TestDatabase.logger))
            let report = try await recovery.recover(from: Date().addingTimeInterval(-3_600), to: Date(), dryRun: false, logger: TestDatabase.logger)
            #expect(report.stored == 1)
            // Listed again, or pushed too: the same row.
            let again = try await recovery.recover(from: Date().addingTimeInterval(-3_600), to: Date(), dryRun: false, logger: TestDatabase.logger)
            #expect(again.stored == 0)
            try await play.push(SamplePlayNotifications.voided(token: "tok-v", orderID: "GPA.v", productType: 2))
            try await play.harness.drain()
            #expect(try await play.entitlement("play:tok-v")?.status == "refunded")
            #expect(try await play.harness.db.scalar("SELECT count(*) FROM events WHERE source = 'play_purchase' AND type = 'VOIDED_PURCHASE'") == 1)
            #expect(try await play.text("SELECT origin FROM events WHERE source = 'play_purchase' AND type = 'VOIDED_PURCHASE'") == "recovery")
        }
    }

    @Test func reconciliationFetchesASubscriptionWhoseEndNeverCame() async throws {
        try await PlayHarness.run { play in
            play.api.setSubscription("tok-r", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Date().addingTimeInterval(Self.month), acknowledged: true, account: "acct_r"))
            try await play.push(SamplePlayNotifications.subscription(4, token: "tok-r"))
            try await play.harness.drain()
            var reconciler = Reconciler(
                store: RecoveredEventStore(client: play.harness.db.client, logger: TestDatabase.logger),
                settings: try RecoverySettings(environment: EnvironmentValues(play.environment)), client: play.harness.db.client)
            reconciler.play = (try play.playAPI(), [SamplePlayNotifications.packageName])
            let candidates = try await reconciler.candidates(entityKeys: ["play:tok-r"])
            #expect(try await reconciler.check(candidates, dryRun: false, logger: TestDatabase.logger).checked == ["play:tok-r": .unchanged])
            // It expired; the push was lost.
            play.api.setSubscription("tok-r", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_EXPIRED", expiry: Date().addingTimeInterval(-60), autoRenew: false, acknowledged: true, account: "acct_r"))
            #expect(try await reconciler.check(candidates, dryRun: false, logger: TestDatabase.logger).checked == ["play:tok-r": .corrected])
            try await play.harness.drain()
            #expect(try await play.entitlement("play:tok-r")?.status == "expired")
        }
    }

    @Test func aPlayAndAnAppStorePurchaseOfOneProductGiveOneAccessLevel() async throws {
        try await PlayHarness.run { play in
            _ = try await CatalogStore(client: play.harness.db.client, logger: TestDatabase.logger).add(CatalogProduct(
                id: "pro", type: .autoRenewable, appleProductIDs: ["pro.monthly"], playProductIDs: ["pro.play"], accessLevels: ["pro"]))
            play.api.setSubscription("tok-c", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", product: "pro.play", expiry: Date().addingTimeInterval(Self.month), account: "acct_both"))
            try await play.push(SamplePlayNotifications.subscription(4, token: "tok-c"))
            try await play.harness.sync(subscription("2000000000777", user: "acct_both"), userID: "acct_both")
            try await play.harness.drain()
            let access = try await play.harness.read("/v1/iap/access?user_id=acct_both", key: "access")
            #expect(access.count == 1)
            #expect(access.first?["access_level"] as? String == "pro")
            #expect(access.first?["is_active"] as? Bool == true)
            #expect((access.first?["entitlements"] as? [String])?.count == 2)
        }
    }

    @Test func aStoreProductIDBelongsToOneCatalogProductAcrossStores() async throws {
        try await TestDatabase.with { db in
            let catalog = CatalogStore(client: db.client, logger: TestDatabase.logger)
            _ = try await catalog.add(CatalogProduct(id: "pro", type: .autoRenewable, appleProductIDs: ["pro.monthly"], accessLevels: ["pro"]))
            await #expect(throws: CatalogStore.Refusal.self) {
                _ = try await catalog.add(CatalogProduct(id: "plus", type: .autoRenewable, playProductIDs: ["pro.monthly"]))
            }
            // The same id on both stores of one product is fine.
            #expect(try await catalog.update("pro", .init(playProductIDs: ["pro.monthly"]))?.playProductIDs == ["pro.monthly"])
        }
    }

    @Test func aProductSyncWithoutItsTypeIsFoundAfterGooglesRefusal() async throws {
        try await PlayHarness.run { play in
            play.api.setProduct("tok-pt", SamplePlayPurchases.product("coins.lifetime", order: "GPA.pt"))
            let response = try await play.sync(["purchase_token": "tok-pt", "product_id": "coins.lifetime", "user_id": "acct_pt"])
            #expect(response.status == .accepted, "\(String(buffer: response.body))")
            try await play.harness.drain()
            #expect(try await play.entitlement("play:tok-pt")?.status == "active")
        }
    }

    @Test func aSyncForAnotherUserFollowsTransferBehavior() async throws {
        for (behavior, owner) in [("keep", "acct_first"), ("transfer", "acct_second")] {
            try await PlayHarness.run(worker: ["TRANSFER_BEHAVIOR": behavior]) { play in
                play.api.setSubscription("tok-t", SamplePlayPurchases.subscription(
                    state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Date().addingTimeInterval(Self.month), acknowledged: true))
                #expect(try await play.sync(["purchase_token": "tok-t", "product_id": "pro", "user_id": "acct_first"]).status == .accepted)
                try await play.harness.drain()
                #expect(try await play.sync(["purchase_token": "tok-t", "product_id": "pro", "user_id": "acct_second"]).status == .accepted)
                try await play.harness.drain()
                #expect(try await play.entitlement("play:tok-t")?.user == owner, "TRANSFER_BEHAVIOR=\(behavior)")
                let transfers = try await play.harness.db.scalar("SELECT count(*) FROM entitlement_transfers")
                #expect(transfers == (behavior == "keep" ? 0 : 1), "TRANSFER_BEHAVIOR=\(behavior)")
            }
        }
    }

    @Test func theVoidedListIsReadPageByPage() async throws {
        try await PlayHarness.run { play in
            play.api.setVoidedPageSize(2)
            for index in 0..<5 {
                play.api.addVoided([
                    "kind": "androidpublisher#voidedPurchase", "purchaseToken": "tok-page-\(index)", "orderId": "GPA.page-\(index)",
                    "purchaseTimeMillis": "1468825200000", "voidedTimeMillis": "1469430000000", "voidedSource": 2, "voidedReason": 7,
                ])
            }
            let recovery = PlayRecovery(
                api: try play.playAPI(), packageNames: [SamplePlayNotifications.packageName],
                store: RecoveredEventStore(client: play.harness.db.client, logger: TestDatabase.logger))
            let report = try await recovery.recover(from: Date().addingTimeInterval(-3_600), to: Date(), dryRun: false, logger: TestDatabase.logger)
            #expect(report.found == 5)
            #expect(report.stored == 5)
        }
    }

    @Test func aNotificationOfAnUnknownKindIsRecordedNotRefused() async throws {
        try await PlayHarness.run { play in
            try await play.push(["version": "1.0", "packageName": SamplePlayNotifications.packageName, "eventTimeMillis": "1503349566168",
                                 "pendingRefundReviewNotification": ["purchaseToken": "tok-x"] as [String: any Sendable]])
            try await play.harness.drain()
            #expect(try await play.text("SELECT type FROM events WHERE source = 'play'") == "UNKNOWN_NOTIFICATION")
            #expect(try await play.text("SELECT state FROM events WHERE source = 'play'") == "done")
        }
    }

    /// Play's changes reach endpoints in the one event stream: `cause.provider` `google_play`,
    /// delivered (a delivery's kind is the store) and verified with the endpoint's secret.
    @Test func aPlayPurchaseIsAnnouncedToEndpointsAsGooglePlay() async throws {
        try await HTTPSink.with { sink in
            try await PlayHarness.run { play in
                let (_, secret) = try await OutgoingEventsTests.addEndpoint(play.harness, url: sink.url, sources: ["google_play"])
                play.api.setSubscription("tok-e", SamplePlayPurchases.subscription(
                    state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Date().addingTimeInterval(Self.month), account: "acct_e"))
                try await play.push(SamplePlayNotifications.subscription(4, token: "tok-e"))
                try await play.harness.drain()
                try await play.harness.forward()
                let events = try OutgoingEventsTests.events(sink, secret: secret)
                #expect(events.map { $0["type"] as? String } == ["entitlement.granted", "transaction.succeeded"])
                #expect(((events.first?["cause"] as? [String: Any])?["provider"]) as? String == "google_play")
                #expect(try await play.harness.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'dead'") == 0)
            }
        }
    }

    /// `worker customer` and the console find a Play purchase by its token, its order or its key.
    @Test func anOperatorFindsAPlayPurchaseByTokenOrderOrKey() async throws {
        try await PlayHarness.run { play in
            play.api.setSubscription("tok-find", SamplePlayPurchases.subscription(
                state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Date().addingTimeInterval(Self.month), order: "GPA.find-1", account: "acct_find"))
            try await play.push(SamplePlayNotifications.subscription(4, token: "tok-find"))
            try await play.harness.drain()
            let lookup = CustomerLookup(client: play.harness.db.client, logger: TestDatabase.logger)
            for id in ["tok-find", "GPA.find-1", "play:tok-find", "acct_find"] {
                #expect(try await lookup.find(id) == [.user("acct_find")], "\(id)")
            }
        }
    }
}
