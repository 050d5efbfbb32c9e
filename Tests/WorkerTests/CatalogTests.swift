// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import Shared
import Testing
import TestSupport

@testable import Worker

/// The product catalog (issue 39, part 1): managed with `worker products`, and one access level
/// answered from purchases on both stores (`GET /v1/iap/access`).
@Suite(.timeLimit(.minutes(3)))
struct CatalogTests {
    @Test func theCommandsManageProductsAndRefuseBadInput() async throws {
        try await TestDatabase.with { db in
            let added = try await OperatorCommandTests.worker(
                db, ["products", "add", "pro.monthly", "--type", "auto_renewable", "--stripe-price", "price_pro_monthly",
                     "--apple-product-ids", "com.example.pro.monthly", "--trial-days", "7", "--access-levels", "pro,ad_free", "--json"])
            #expect(added.status == 0, "\(added.stderr)")
            let product = try #require(try OperatorCommandTests.json(added.stdout) as? [String: Any])
            #expect(product["access_levels"] as? [String] == ["ad_free", "pro"] && product["trial_days"] as? Int == 7)
            #expect(product["apple_product_ids"] as? [String] == ["com.example.pro.monthly"])

            // One App Store product is one catalog product; one id is one product.
            let taken = try await OperatorCommandTests.worker(db, ["products", "add", "pro.other", "--type", "auto_renewable", "--apple-product-ids", "com.example.pro.monthly"])
            #expect(taken.status == 1 && taken.stderr.contains("com.example.pro.monthly is product pro.monthly's"), "\(taken.stderr)")
            #expect(try await OperatorCommandTests.worker(db, ["products", "add", "pro.monthly", "--type", "consumable"]).status == 1)
            for bad in [["products", "add", "x", "--type", "weekly"], ["products", "add", "x"], ["products", "add", "x", "--type", "consumable", "--access-levels", "Pro"],
                        ["products", "add", "x", "--type", "consumable", "--trial-days", "9999"]] {
                #expect(try await OperatorCommandTests.worker(db, bad).status == 2, "\(bad)")
            }

            let updated = try await OperatorCommandTests.worker(db, ["products", "update", "pro.monthly", "--trial-days", "0", "--access-levels", "pro", "--json"])
            let changed = try #require(try OperatorCommandTests.json(updated.stdout) as? [String: Any])
            #expect(changed["trial_days"] is NSNull && changed["access_levels"] as? [String] == ["pro"] && changed["stripe_price"] as? String == "price_pro_monthly")
            #expect(try await OperatorCommandTests.worker(db, ["products", "show", "pro.monthly"]).stdout.contains("access levels  pro"))
            #expect(try await OperatorCommandTests.worker(db, ["products", "archive", "pro.monthly"]).status == 0)
            #expect(try await OperatorCommandTests.worker(db, ["products", "list"]).stdout.contains("no products"), "archived: no longer listed as sold")
            #expect(try await OperatorCommandTests.worker(db, ["products", "list", "--all"]).stdout.contains("pro.monthly"))
            #expect(try await OperatorCommandTests.worker(db, ["products", "show", "nope"]).status == 1)
        }
    }

    @Test func proFromTheWebAndFromTheAppStoreIsOneAccessLevel() async throws {
        try await SystemHarness.run { system in
            let store = CatalogStore(client: system.db.client, logger: TestDatabase.logger)
            _ = try await store.add(CatalogProduct(id: "pro.monthly", type: .autoRenewable, accessLevels: ["pro"]))
            _ = try await store.add(CatalogProduct(
                id: "pro.yearly", type: .autoRenewable, appleProductIDs: ["com.example.pro.yearly"], accessLevels: ["pro", "ad_free"]))
            let user = "acct_access"
            let month = Date().addingTimeInterval(30 * 86_400)
            try await system.stripe(
                "customer.subscription.created",
                StripeObjects.subscription("sub_access", user: user, product: "pro.monthly", periodEnd: month, customer: "cus_access"))
            let token = UUID().uuidString.lowercased()
            let yearly = subscription("5600001", user: token, product: "com.example.pro.yearly", expires: Date().addingTimeInterval(365 * 86_400))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: yearly)
            #expect(try await AppAccountTokenTests.register(system, token: token, user: user).status == .created)
            try await system.drain()

            let response = try await system.client.execute(
                uri: "/v1/iap/access?user_id=\(user)", method: .get, headers: [.authorization: "Bearer \(TestCredentials.apiKey)"])
            #expect(response.status == .ok)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
            let levels = try #require(body["access"] as? [[String: Any]])
            #expect(levels.map { $0["access_level"] as? String } == ["ad_free", "pro"])
            let pro = levels[1]
            #expect(pro["is_active"] as? Bool == true)
            #expect((pro["entitlements"] as? [String])?.count == 2, "the web and the App Store subscription")
            let expiry = try #require((pro["expires_at"] as? String).flatMap { try? Date($0, strategy: .iso8601) })
            #expect(expiry > month, "the later of the two: the yearly one")
            let nobody = try await system.client.execute(
                uri: "/v1/iap/access?user_id=nobody", method: .get, headers: [.authorization: "Bearer \(TestCredentials.apiKey)"])
            #expect(String(buffer: nobody.body) == #"{"access":[]}"#)
            let client = try await system.client.execute(
                uri: "/v1/iap/access?user_id=\(user)", method: .get, headers: [.authorization: "Bearer \(TestCredentials.clientAPIKey)"])
            #expect(client.status == .forbidden, "a client key may not read")
        }
    }
}
