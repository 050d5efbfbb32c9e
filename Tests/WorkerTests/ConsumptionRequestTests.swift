// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import DevSupport
import Foundation
import PostgresNIO
import Shared
import Synchronization
import Testing
import TestSupport

@testable import Worker

/// Apple's `CONSUMPTION_REQUEST`, through the real ingest, worker and PostgreSQL, answered to the
/// App Store Server API stand-in, which checks the body against Apple's documented fields.
@Suite(.timeLimit(.minutes(3)))
struct ConsumptionRequestTests {
    static func responder(
        _ system: SystemHarness, _ standIn: AppStoreServerAPIStandIn, policy: ConsumptionAnswer.Policy,
        onError: @escaping @Sendable (Int) -> Void = { _ in }
    ) -> ConsumptionResponder {
        let api = AppStoreServerAPI(
            call: ProviderCall(http: .shared, provider: "App Store Server", maximumAttempts: 1, onError: onError),
            token: AppleAPIToken(keyID: AppStoreServerAPIStandIn.keyID, issuerID: AppStoreServerAPIStandIn.issuerID, key: standIn.key),
            baseURLs: [.production: standIn.baseURL, .sandbox: standIn.baseURL + "/sandbox"])
        return ConsumptionResponder(
            client: system.db.client, api: api, settings: .init(refundPreference: policy, sampleContentProvided: false),
            lease: MaintenanceLease(client: system.db.client, task: "consumption-response", owner: "test", logger: TestDatabase.logger),
            interval: .seconds(1), logger: TestDatabase.logger)
    }

    static func rows(_ system: SystemHarness) async throws -> [(state: String, attempts: Int32, body: String?)] {
        var rows: [(String, Int32, String?)] = []
        for try await row in try await system.db.client.query(
            "SELECT state, attempts, body::text FROM consumption_requests ORDER BY id", logger: TestDatabase.logger
        ).decode((String, Int32, String?).self) { rows.append(row) }
        return rows.map { (state: $0.0, attempts: $0.1, body: $0.2) }
    }

    /// A pack of 500 credits, 300 spent, then the customer asks Apple for a refund: Sluice tells
    /// Apple 60 % was used and, by consumption, that it prefers to decline; once.
    @Test func aRefundRequestIsAnsweredWithWhatWasUsedOnce() async throws {
        try await AppStoreServerAPIStandIn.with(bundleIDs: [TestCredentials.bundleID]) { standIn in
            try await SystemHarness.run { system in
                _ = try await CatalogStore(client: system.db.client, logger: TestDatabase.logger).add(
                    CatalogProduct(id: "credits.500", type: .consumable, currencyGrants: ["credits": 500]))
                var pack = SampleAppleTransaction(
                    transactionId: "4100", bundleId: TestCredentials.bundleID, productId: "credits.500", type: "Consumable",
                    purchaseDate: Date().addingTimeInterval(-3_600))
                pack.environment = "Sandbox"
                try await system.sync(pack, userID: "user_refund")
                try await system.drain()
                _ = try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).adjust(
                    user: "user_refund", try BalanceAdjustments(["credits": -300]), cause: .api, key: "spend", digest: nil)

                try await system.notify("CONSUMPTION_REQUEST", transaction: pack)
                try await system.drain()
                #expect(try await Self.rows(system).map(\.state) == ["pending"], "recorded when applied")

                let responder = Self.responder(system, standIn, policy: .byConsumption)
                #expect(try await responder.runOnce() == 1)
                #expect(try await responder.runOnce() == 0, "answered once")
                let sent = try #require(standIn.consumption.first)
                #expect(standIn.consumption.count == 1 && sent.transactionID == "4100" && sent.environment == .sandbox)
                #expect(sent.body
                    == #"{"consumptionPercentage":60000,"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"DECLINE","sampleContentProvided":false}"#)
                let row = try #require(try await Self.rows(system).first)
                #expect(row.state == "sent" && row.body?.contains("\"consumptionPercentage\": 60000") == true, "\(row)")
                // On the customer's timeline, with what was sent.
                let story = try #require(try await CustomerStory.load(
                    .user("user_refund"), client: system.db.client, leeway: 0, sandboxAccess: .anybody, eventProof: nil, logger: TestDatabase.logger))
                let request = try #require(story.timeline.first { $0.type == "CONSUMPTION_REQUEST" })
                #expect(request.detail?.contains("consumption information sent to Apple") == true && request.detail?.contains("DECLINE") == true,
                        "\(request.detail ?? "")")
            }
        }
    }

    /// The catalog's `credits.500`, a consumable granting 500 credits.
    static func addPack(_ system: SystemHarness) async throws {
        _ = try await CatalogStore(client: system.db.client, logger: TestDatabase.logger).add(
            CatalogProduct(id: "credits.500", type: .consumable, currencyGrants: ["credits": 500]))
    }

    /// A sandbox purchase `id` of `credits.500`, made `ago` seconds ago.
    static func pack(_ id: String, ago: TimeInterval) -> SampleAppleTransaction {
        var pack = SampleAppleTransaction(
            transactionId: id, bundleId: TestCredentials.bundleID, productId: "credits.500", type: "Consumable",
            purchaseDate: Date().addingTimeInterval(-ago))
        pack.environment = "Sandbox"
        return pack
    }

    /// Apple's `CONSUMPTION_REQUEST` for `transaction`, applied and answered by consumption:
    /// the one body sent, and to which transaction.
    static func answer(
        _ system: SystemHarness, _ standIn: AppStoreServerAPIStandIn, _ transaction: SampleAppleTransaction
    ) async throws -> (transactionID: String, body: String) {
        try await system.notify("CONSUMPTION_REQUEST", transaction: transaction)
        try await system.drain()
        #expect(try await Self.responder(system, standIn, policy: .byConsumption).runOnce() == 1)
        let sent = try #require(standIn.consumption.first)
        return (sent.transactionID, sent.body)
    }

    /// `credits.500` in the catalog, and pack `id`, bought two hours ago by `user`, synced and applied.
    static func firstPack(_ system: SystemHarness, _ id: String, user: String) async throws -> SampleAppleTransaction {
        try await addPack(system)
        let pack = pack(id, ago: 7_200)
        try await system.sync(pack, userID: user)
        try await system.drain()
        return pack
    }

    /// The body sent for a purchase used in full, and for one unused.
    static let usedInFull =
        #"{"consumptionPercentage":100000,"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"DECLINE","sampleContentProvided":false}"#
    static let unused =
        #"{"consumptionPercentage":0,"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"GRANT_FULL","sampleContentProvided":false}"#

    /// A pack of 500 credits spent in full, then a second pack bought: the refund request of the
    /// first is answered as used in full (the 500 left are the second pack's), not as unused.
    @Test func aPackSpentBeforeTheNextWasBoughtIsAnsweredAsUsed() async throws {
        try await AppStoreServerAPIStandIn.with(bundleIDs: [TestCredentials.bundleID]) { standIn in
            try await SystemHarness.run { system in
                let first = try await Self.firstPack(system, "4300", user: "user_twice")
                _ = try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).adjust(
                    user: "user_twice", try BalanceAdjustments(["credits": -500]), cause: .api, key: "spend-all", digest: nil)
                try await system.sync(Self.pack("4301", ago: 3_600), userID: "user_twice")
                try await system.drain()
                #expect(try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).balances(user: "user_twice") == ["credits": 500])

                let sent = try await Self.answer(system, standIn, first)
                #expect(sent.transactionID == "4300" && sent.body == Self.usedInFull)
            }
        }
    }

    /// A pack of 500 unspent, a second pack bought and refunded: the 500 left are the first pack's
    /// (what was taken back never arrived to be spent), so it is answered as unused.
    @Test func aLaterPackTakenBackIsNotCountedAsWhatIsLeft() async throws {
        try await AppStoreServerAPIStandIn.with(bundleIDs: [TestCredentials.bundleID]) { standIn in
            try await SystemHarness.run { system in
                let first = try await Self.firstPack(system, "4400", user: "user_kept")
                var second = Self.pack("4401", ago: 3_600)
                try await system.sync(second, userID: "user_kept")
                try await system.drain()
                second.revocationDate = Date().addingTimeInterval(-60).millisecondsSince1970
                second.revocationReason = 0
                try await system.notify("REFUND", transaction: second)
                try await system.drain()
                #expect(try await BalanceStore(client: system.db.client, logger: TestDatabase.logger).balances(user: "user_kept") == ["credits": 500])

                #expect(try await Self.answer(system, standIn, first).body == Self.unused)
            }
        }
    }

    /// A pack of 500, then a subscription month granting 1,000 that expire, 800 spent: the spend
    /// took the month's credits first (the lot that expires), so the pack is answered as unused.
    @Test func creditsThatExpireAreSpentBeforeThePack() async throws {
        try await AppStoreServerAPIStandIn.with(bundleIDs: [TestCredentials.bundleID]) { standIn in
            try await SystemHarness.run { system in
                try await Self.addPack(system)
                _ = try await CatalogStore(client: system.db.client, logger: TestDatabase.logger).add(CatalogProduct(
                    id: "pro.monthly", type: .autoRenewable, accessLevels: ["pro"], currencyGrants: ["credits": 1_000], currencyGrantsExpire: true))
                let pack = Self.pack("4500", ago: 7_200)
                try await system.sync(pack, userID: "user_month")
                try await system.drain()
                try await system.sync(subscription("4600", user: nil, purchased: Date().addingTimeInterval(-3_600)), userID: "user_month")
                try await system.drain()
                let balances = BalanceStore(client: system.db.client, logger: TestDatabase.logger)
                #expect(try await balances.balances(user: "user_month") == ["credits": 1_500])
                _ = try await balances.adjust(user: "user_month", try BalanceAdjustments(["credits": -800]), cause: .api, key: "spend-800", digest: nil)

                #expect(try await Self.answer(system, standIn, pack).body == Self.unused)
            }
        }
    }

    /// Apple failing is retried later; Apple refusing is kept as failed; a request past Apple's
    /// 12 hours is not answered; a request about a purchase the ledger does not hold is not
    /// answered yet, and is once the purchase is applied.
    @Test func failuresAreRetriedRefusalsKeptAndLateOrUnknownRequestsLeft() async throws {
        try await AppStoreServerAPIStandIn.with(bundleIDs: [TestCredentials.bundleID]) { standIn in
            try await SystemHarness.run { system in
                func transaction(_ id: String) -> SampleAppleTransaction {
                    var tx = SampleAppleTransaction(transactionId: id, bundleId: TestCredentials.bundleID, productId: "gems", type: "Consumable")
                    tx.environment = "Sandbox"
                    return tx
                }
                for id in ["4201", "4202"] { try await system.sync(transaction(id), userID: "user_asks") }
                for (id, minutesAgo) in [("4201", 10.0), ("4202", 10), ("4203", 13 * 60), ("4204", 10)] {
                    try await system.notify("CONSUMPTION_REQUEST", transaction: transaction(id), at: Date().addingTimeInterval(-minutesAgo * 60))
                }
                try await system.drain()
                standIn.misbehave { _, request in
                    request.path.hasSuffix("/4201") ? .status(503) : request.path.hasSuffix("/4202") ? .status(400) : nil
                }
                #expect(try await Self.responder(system, standIn, policy: .none).runOnce() == 0)
                let rows = try await Self.rows(system)
                #expect(rows.map(\.state) == ["pending", "failed", "expired", "pending"], "\(rows)")
                #expect(rows[0].attempts == 1 && rows[3].attempts == 0, "waiting for the purchase is not an attempt")
                #expect(try await system.db.scalar(
                    "SELECT count(*) FROM consumption_requests WHERE state = 'pending' AND next_attempt_at > now() + interval '50 seconds'") == 2)
                #expect(standIn.consumption.isEmpty)
                // Paid, nothing granted: delivered, no consumption, no preference.
                let body = try #require(rows[1].body)
                #expect(body.contains("\"deliveryStatus\": \"DELIVERED\"") && !body.contains("consumptionPercentage"))
                // No record of it: nothing said to Apple, and why; looked at again within a minute.
                #expect(rows[3].body == nil)
                #expect(try await system.db.scalar(
                    "SELECT count(*) FROM consumption_requests WHERE transaction_id = '4204' AND last_error LIKE 'Sluice has no record of transaction 4204 yet%'") == 1)

                // Its purchase applied after the request, it is answered when next due.
                try await system.sync(transaction("4204"), userID: "user_asks")
                try await system.drain()
                try await system.db.client.query("UPDATE consumption_requests SET next_attempt_at = now() WHERE transaction_id = '4204'", logger: TestDatabase.logger)
                #expect(try await Self.responder(system, standIn, policy: .none).runOnce() == 1)
                let sent = try #require(standIn.consumption.first)
                #expect(standIn.consumption.count == 1 && sent.transactionID == "4204")
                #expect(sent.body == #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#)
                #expect(try await Self.rows(system).map(\.state) == ["pending", "failed", "expired", "sent"])

                // Still failing when Apple's 12 hours pass: expired, saying what it waited on.
                try await system.db.client.query(
                    "UPDATE consumption_requests SET requested_at = now() - interval '13 hours', next_attempt_at = now() WHERE transaction_id = '4201'",
                    logger: TestDatabase.logger)
                #expect(try await Self.responder(system, standIn, policy: .none).runOnce() == 0)
                #expect(try await Self.rows(system).map(\.state) == ["expired", "failed", "expired", "sent"])
                #expect(try await system.db.scalar("""
                    SELECT count(*) FROM consumption_requests
                    WHERE transaction_id = '4201' AND last_error LIKE 'Apple''s 12 hours to answer passed (before: %503%)'
                    """) == 1)
                #expect(try await system.db.scalar(
                    "SELECT count(*) FROM consumption_requests WHERE transaction_id = '4203' AND last_error = 'Apple''s 12 hours to answer passed'") == 1)
            }
        }
    }

    /// The worker stopping in the middle of a pass, an answer on its way to an Apple that is slow
    /// to take it: the pass ends at once, sends nothing more, and spends nothing — no try counted,
    /// no request put back, no provider error counted — so the next worker answers all three as
    /// if this pass had not begun.
    @Test func aPassCutShortByAStopSpendsNothing() async throws {
        try await AppStoreServerAPIStandIn.with(bundleIDs: [TestCredentials.bundleID]) { standIn in
            try await SystemHarness.run { system in
                let ids = ["4501", "4502", "4503"]
                for id in ids {
                    var tx = SampleAppleTransaction(transactionId: id, bundleId: TestCredentials.bundleID, productId: "gems", type: "Consumable")
                    tx.environment = "Sandbox"
                    try await system.sync(tx, userID: "user_stops")
                    try await system.notify("CONSUMPTION_REQUEST", transaction: tx)
                }
                try await system.drain()
                standIn.misbehave { _, _ in .delay(.seconds(10)) }
                let errors = Mutex(0)
                let responder = Self.responder(system, standIn, policy: .none, onError: { _ in errors.withLock { $0 += 1 } })
                @Sendable func sent() -> [String] { standIn.requests.map(\.path).filter { $0.contains("/consumption/") } }

                let stopped = try await stopMidPass({ try await responder.runOnce() }, once: { !sent().isEmpty })
                #expect(stopped.took < .seconds(8), "ended with the stop, not with Apple's answer")
                if let error = stopped.error { #expect(error is CancellationError, "\(error)") }
                #expect(sent().count == 1, "nothing sent after the stop: \(sent())")
                #expect(errors.withLock { $0 } == 0, "a stop is not a provider error")
                let rows = try await Self.rows(system)
                #expect(rows.map(\.state) == ["pending", "pending", "pending"] && rows.allSatisfy { $0.attempts == 0 }, "\(rows)")
                #expect(try await system.db.scalar(
                    "SELECT count(*) FROM consumption_requests WHERE next_attempt_at <= now() AND last_error IS NULL") == 3, "all still due")

                // The next worker answers all three.
                standIn.misbehave { _, _ in nil }
                #expect(try await Self.responder(system, standIn, policy: .none).runOnce() == 3)
            }
        }
    }

    /// Fifty requests about purchases Sluice has no record of, due again every minute, do not
    /// keep a newer request from its turn (a pass takes fifty, the longest due first).
    @Test func requestsWaitingForTheirPurchasesDoNotStarveANewerOne() async throws {
        try await AppStoreServerAPIStandIn.with(bundleIDs: [TestCredentials.bundleID]) { standIn in
            try await SystemHarness.run { system in
                try await system.db.client.query(
                    """
                    INSERT INTO consumption_requests (event_id, transaction_id, environment, bundle_id, requested_at)
                    SELECT 900000 + n, '49' || n, 'sandbox', \(TestCredentials.bundleID), now() FROM generate_series(1, 50) AS n
                    """, logger: TestDatabase.logger)
                var known = SampleAppleTransaction(transactionId: "4400", bundleId: TestCredentials.bundleID, productId: "gems", type: "Consumable")
                known.environment = "Sandbox"
                try await system.sync(known, userID: "user_waits")
                try await system.notify("CONSUMPTION_REQUEST", transaction: known)
                try await system.drain()
                let responder = Self.responder(system, standIn, policy: .none)
                #expect(try await responder.runOnce() == 0, "the fifty waiting ones came first")

                // A minute on, the fifty are due again; the newer request, due longer, goes first.
                try await system.db.client.query(
                    "UPDATE consumption_requests SET next_attempt_at = now() WHERE transaction_id <> '4400'", logger: TestDatabase.logger)
                #expect(try await responder.runOnce() == 1)
                #expect(standIn.consumption.map(\.transactionID) == ["4400"])
            }
        }
    }

    @Test func offByDefaultAndOnlyWithTheAppStoreKey() throws {
        #expect(try ConsumptionSettings.configured(by: EnvironmentValues([:]), appleAPI: true) == nil)
        #expect(try ConsumptionSettings.configured(by: EnvironmentValues(["CONSUMPTION_RESPONSE": "off"]), appleAPI: true) == nil)
        #expect(throws: ConfigurationError.self) {
            try ConsumptionSettings.configured(by: EnvironmentValues(["CONSUMPTION_RESPONSE": "on"]), appleAPI: false)
        }
        #expect(throws: ConfigurationError.self) {
            try ConsumptionSettings.configured(by: EnvironmentValues(["CONSUMPTION_RESPONSE": "on", "CONSUMPTION_REFUND_PREFERENCE": "maybe"]), appleAPI: true)
        }
        let on = try ConsumptionSettings.configured(
            by: EnvironmentValues(["CONSUMPTION_RESPONSE": "on", "CONSUMPTION_REFUND_PREFERENCE": "grant_prorated", "CONSUMPTION_SAMPLE_CONTENT_PROVIDED": "true"]),
            appleAPI: true)
        #expect(on == ConsumptionSettings(refundPreference: .grantProrated, sampleContentProvided: true))
    }
}
