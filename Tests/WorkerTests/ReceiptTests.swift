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

/// StoreKit 1 receipts through the real ingest, worker and PostgreSQL, against the App Store
/// Server API stand-in (Get Transaction History v2): Apple's own Xcode receipt names transaction
/// "0"; Apple answers the customer's history, signed; each purchase is verified, stored and
/// applied as a sync (docs/receipts.md).
@Suite(.timeLimit(.minutes(3)))
struct ReceiptTests {
    /// The bundle of Apple's Xcode receipt files.
    static let bundle = "com.example.naturelab.backyardbirds.example"

    static func purchases(user: String?) -> [SampleAppleTransaction] {
        let start = Date().addingTimeInterval(-20 * 86_400).rounded
        var monthly = SampleAppleTransaction(
            transactionId: "0", bundleId: bundle, productId: "pro.monthly", purchaseDate: start, appAccountToken: user)
        monthly.environment = "Sandbox"
        var renewal = SampleAppleTransaction(
            transactionId: "1", originalTransactionId: "0", bundleId: bundle, productId: "pro.monthly",
            purchaseDate: start.addingTimeInterval(30 * 86_400), appAccountToken: user)
        renewal.environment = "Sandbox"
        var lifetime = SampleAppleTransaction(
            transactionId: "7", bundleId: bundle, productId: "pro.lifetime", type: "Non-Consumable", purchaseDate: start, appAccountToken: user)
        lifetime.environment = "Sandbox"
        return [monthly, renewal, lifetime]
    }

    static func run(_ body: @Sendable @escaping (SystemHarness, AppStoreServerAPIStandIn) async throws -> Void) async throws {
        try await AppStoreServerAPIStandIn.with(bundleIDs: [bundle]) { standIn in
            let signed = try Self.purchases(user: nil).map { try TestCredentials.signer.sign($0) }
            // Production does not know the receipt's transaction: Sandbox does.
            standIn.setHistory(signed, ids: ["0", "1", "7"], environment: .sandbox)
            var ingest = try standIn.workerEnvironment()
            ingest["APPLE_BUNDLE_IDS"] = bundle
            try await SystemHarness.run(ingest: ingest) { system in try await body(system, standIn) }
        }
    }

    static func post(_ system: SystemHarness, _ path: String, _ body: [String: String], key: String = TestCredentials.clientAPIKey) async throws
        -> TestResponse
    {
        try await system.client.execute(
            uri: path, method: .post, headers: [HTTPField.Name("X-Sluice-Key")!: key, .contentType: "application/json"],
            body: ByteBuffer(data: try JSONEncoder().encode(body)))
    }

    @Test func aReceiptWhoseHistoryHoldsThreePurchasesAppliesThreeOnce() async throws {
        try await Self.run { system, standIn in
            let receipt = try Vectors.text("apple/receipts/xcode-app-receipt-with-transaction.b64")
            let first = try await Self.post(system, "/v1/iap/receipts", ["receipt": receipt, "user_id": "user_receipt"])
            #expect(first.status == .accepted, "\(String(buffer: first.body))")
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(buffer: first.body)) as? [String: Any])
            #expect(answer["environment"] as? String == "sandbox")
            #expect((answer["transactions"] as? [[String: Any]])?.compactMap { $0["transaction_id"] as? String } == ["0", "1", "7"])
            #expect(standIn.requests.map(\.path) == ["/inApps/v2/history/0", "/sandbox/inApps/v2/history/0"], "Production, then Sandbox")
            #expect(standIn.requests.allSatisfy { $0.bundleID == Self.bundle && $0.tokenProblem == nil })

            let again = try await Self.post(system, "/v1/iap/receipts", ["receipt": receipt, "user_id": "user_receipt"])
            #expect(again.status == .ok, "the same receipt again stores nothing new")
            try await system.drain()
            let transactions = try await system.transactions(userID: "user_receipt")
            #expect(Set(transactions.compactMap { $0["provider_transaction_id"] as? String }) == ["0", "1", "7"])
            let entitlements = try await system.entitlements(userID: "user_receipt")
            #expect(Set(entitlements.compactMap { $0["product_id"] as? String }) == ["pro.monthly", "pro.lifetime"])
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE source = 'storekit'") == 3)
        }
    }

    /// Apple refusing Sluice's key is `502 app_store_refused` (sending again changes nothing);
    /// Apple unavailable is `503 app_store_unavailable` with `Retry-After` (send again later); a
    /// success that is not Apple's documented JSON is `502 app_store_unreadable`, not a refusal;
    /// none stores anything, and the receipt goes through once Apple answers.
    @Test func appleRefusingAndAppleUnavailableAreToldApart() async throws {
        try await Self.run { system, standIn in
            let receipt = try Vectors.text("apple/receipts/xcode-app-receipt-with-transaction.b64")
            standIn.misbehave { _, _ in .status(401) }
            let refused = try await Self.post(system, "/v1/iap/receipts", ["receipt": receipt, "user_id": "user_r"])
            #expect(refused.status == .badGateway && PlayHarness.errorCode(refused) == "app_store_refused", "\(String(buffer: refused.body))")

            standIn.misbehave { _, _ in .status(503) }
            let unavailable = try await Self.post(system, "/v1/iap/receipts", ["receipt": receipt, "user_id": "user_r"])
            #expect(unavailable.status == .serviceUnavailable && PlayHarness.errorCode(unavailable) == "app_store_unavailable",
                    "\(String(buffer: unavailable.body))")
            #expect(unavailable.headers[.retryAfter] == "30")

            standIn.misbehave { _, _ in .answer(200, body: "<html>maintenance</html>") }
            let unreadable = try await Self.post(system, "/v1/iap/receipts", ["receipt": receipt, "user_id": "user_r"])
            #expect(unreadable.status == .badGateway && PlayHarness.errorCode(unreadable) == "app_store_unreadable",
                    "\(String(buffer: unreadable.body))")
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE source = 'storekit'") == 0)

            standIn.misbehave { _, _ in nil }
            #expect(try await Self.post(system, "/v1/iap/receipts", ["receipt": receipt, "user_id": "user_r"]).status == .accepted)
        }
    }

    /// The attack: a receipt's PKCS#7 signature is not checked (Apple's ReceiptUtility does not
    /// either), so whoever knows a transaction id can make one. Posted for another user, it
    /// stores that user's syncs but moves no purchase from the user who holds it, whatever
    /// TRANSFER_BEHAVIOR says (the default moves a plain sync's).
    @Test func aReceiptPostedForAnotherUserMovesNoPurchase() async throws {
        try await Self.run { system, _ in
            let receipt = try Vectors.text("apple/receipts/xcode-app-receipt-with-transaction.b64")
            #expect(try await Self.post(system, "/v1/iap/receipts", ["receipt": receipt, "user_id": "user_owner"]).status == .accepted)
            try await system.drain()
            #expect(try await system.entitlements(userID: "user_owner").count == 2)

            #expect(try await Self.post(system, "/v1/iap/receipts", ["receipt": receipt, "user_id": "user_thief"]).status == .accepted)
            try await system.drain()
            #expect(try await system.entitlements(userID: "user_thief").isEmpty)
            #expect(try await system.entitlements(userID: "user_owner").count == 2)
            #expect(try await system.db.scalar("SELECT count(*) FROM entitlement_transfers") == 0)
        }
    }

    /// A shared Apple ID: the customer's history holds a purchase another app account made with
    /// its own appAccountToken. Before, that one's `409 user_mismatch` failed the whole request
    /// after the purchases before it were stored, and every retry failed the same way, so the
    /// purchases after it were never stored. Now it is named, and the others are stored.
    @Test func aPurchaseOfAnotherAccountInTheHistoryIsNamedAndTheOthersStored() async throws {
        try await Self.run { system, standIn in
            var purchases = Self.purchases(user: nil)
            purchases[2].appAccountToken = UUID().uuidString.lowercased()
            standIn.setHistory(try purchases.map { try TestCredentials.signer.sign($0) }, ids: ["0", "1", "7"], environment: .sandbox)
            let receipt = try Vectors.text("apple/receipts/xcode-app-receipt-with-transaction.b64")
            let posted = try await Self.post(system, "/v1/iap/receipts", ["receipt": receipt, "user_id": "user_shared_apple_id"])
            #expect(posted.status == .accepted, "\(String(buffer: posted.body))")
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(buffer: posted.body)) as? [String: Any])
            let items = try #require(answer["transactions"] as? [[String: Any]])
            #expect(items.map { $0["transaction_id"] as? String } == ["0", "1", "7"], "oldest first")
            #expect(items.map { $0["stored"] as? Bool } == [true, true, false])
            #expect(items.map { $0["refused"] as? String } == [nil, nil, "user_mismatch"])
            // The newest are the ones kept when a customer has more than 1,000.
            #expect(standIn.requests.allSatisfy { $0.query.hasPrefix("sort=DESCENDING") }, "\(standIn.requests.map(\.query))")
            try await system.drain()
            let stored = try await system.transactions(userID: "user_shared_apple_id")
            #expect(Set(stored.compactMap { $0["provider_transaction_id"] as? String }) == ["0", "1"])
        }
    }

    @Test func verifyOnlyAnswersWhatTheReceiptHoldsAndStoresNothing() async throws {
        try await Self.run { system, _ in
            let receipt = try Vectors.text("apple/receipts/xcode-app-receipt-with-transaction.b64")
            let response = try await Self.post(system, "/v1/iap/receipts/verify", ["receipt": receipt])
            #expect(response.status == .ok, "\(String(buffer: response.body))")
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
            #expect(answer["bundle_id"] as? String == Self.bundle && answer["receipt_transaction_id"] as? String == "0")
            let transactions = try #require(answer["transactions"] as? [[String: Any]])
            #expect(transactions.map { $0["product_id"] as? String } == ["pro.monthly", "pro.monthly", "pro.lifetime"])
            #expect(transactions.first?["environment"] as? String == "sandbox")
            #expect(try await system.db.scalar("SELECT count(*) FROM events") == 0)

            // Each is the row the read API shows once the receipt is stored, but for its id (none
            // yet), with Apple's ids, expiry and token beside it.
            let apple: Set = ["transaction_id", "original_transaction_id", "expires_at", "app_account_token"]
            #expect(transactions.allSatisfy { $0.keys.contains("id") && $0["id"] is NSNull })
            #expect(transactions.map { $0["original_transaction_id"] as? String } == ["0", "0", "7"])
            #expect(transactions.map { $0["amount_refunded"] is NSNull } == [true, true, true])
            let stored = try await Self.post(system, "/v1/iap/receipts", ["receipt": receipt, "user_id": "user_verify"])
            #expect(stored.status == .accepted)
            try await system.drain()
            let history = try await system.transactions(userID: "user_verify")
            #expect(history.count == 3)
            for row in history {
                let id = try #require(row["provider_transaction_id"] as? String)
                let verified = try #require(transactions.first { $0["transaction_id"] as? String == id })
                let shown = verified.filter { !apple.contains($0.key) && $0.key != "id" }
                #expect(NSDictionary(dictionary: shown) == NSDictionary(dictionary: row.filter { $0.key != "id" }), "\(id)")
            }
        }
    }

    @Test func anEmptyReceiptNamesNothingAndAsksAppleNothing() async throws {
        try await Self.run { system, standIn in
            let receipt = try Vectors.text("apple/receipts/xcode-app-receipt-empty.b64")
            let response = try await Self.post(system, "/v1/iap/receipts", ["receipt": receipt, "user_id": "user_empty"])
            #expect(response.status == .ok)
            #expect(String(buffer: response.body) == #"{"transactions":[]}"#)
            #expect(standIn.requests.isEmpty)
        }
    }

    @Test func aLegacyTransactionReceiptIsReadToo() async throws {
        try await Self.run { system, standIn in
            let receipt = try Vectors.text("apple/receipts/legacyTransaction.b64")
            let response = try await Self.post(system, "/v1/iap/receipts/verify", ["receipt": receipt])
            #expect(response.status == .notFound && response.headers[.contentType] == "application/json")
            #expect(String(buffer: response.body).contains("transaction_not_found"), "Apple knows no 33993399 here")
            #expect(standIn.requests.map(\.path) == ["/inApps/v2/history/33993399", "/sandbox/inApps/v2/history/33993399"])

            // One whose `bid` is another app's is refused, as an app receipt of another app is,
            // before Apple is asked (it was looked up under this deployment's first app).
            let other = LegacyTransactionReceipt.make(transactionID: "1000000012345678", bid: "com.example.not-ours")
            let refused = try await Self.post(system, "/v1/iap/receipts/verify", ["receipt": other])
            #expect(refused.status == .badRequest && String(buffer: refused.body).contains("wrong_bundle"), "\(String(buffer: refused.body))")
            #expect(standIn.requests.count == 2, "Apple was not asked")
        }
    }

    @Test func badReceiptsAndMissingCredentialsAreRefusedWithAReason() async throws {
        try await Self.run { system, _ in
            for (body, code) in [
                (["receipt": "not a receipt", "user_id": "u"], "invalid_receipt"), (["receipt": "", "user_id": "u"], "malformed"),
                (["receipt": try Vectors.text("apple/receipts/xcode-app-receipt-empty.b64")], "malformed"),
            ] {
                let response = try await Self.post(system, "/v1/iap/receipts", body)
                #expect(response.status == .badRequest && String(buffer: response.body).contains(code), "\(code): \(String(buffer: response.body))")
            }
        }
        // The Xcode receipt's bundle is not this deployment's app.
        try await AppStoreServerAPIStandIn.with(bundleIDs: [TestCredentials.bundleID]) { standIn in
            try await SystemHarness.run(ingest: try standIn.workerEnvironment()) { system in
                let receipt = try Vectors.text("apple/receipts/xcode-app-receipt-with-transaction.b64")
                let response = try await Self.post(system, "/v1/iap/receipts", ["receipt": receipt, "user_id": "u"])
                #expect(response.status == .badRequest && String(buffer: response.body).contains("wrong_bundle"))
            }
        }
        try await SystemHarness.run { system in
            let response = try await Self.post(system, "/v1/iap/receipts/verify", ["receipt": "AAAA"])
            #expect(response.status == .serviceUnavailable)
            #expect(String(buffer: response.body).contains("APPLE_API_KEY_ID, APPLE_API_ISSUER_ID and APPLE_API_PRIVATE_KEY_FILE"))
        }
    }
}
