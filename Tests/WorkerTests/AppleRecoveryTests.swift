// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import DevSupport
import Foundation
import NIOCore
import Shared
import Synchronization
import Testing
import TestSupport

@testable import Worker
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import Prometheus

/// Apple notifications that never arrived, recovered from a local App Store Server API stand-in
/// (real ES256 tokens, notifications signed by the test PKI) through the worker's own recovery.
@Suite(.timeLimit(.minutes(3)))
struct AppleRecoveryTests {
    static let interval: Duration = .seconds(900)

    /// The worker's environment for recovery against `standIn`.
    static func environment(_ standIn: AppStoreServerAPIStandIn) throws -> [String: String] {
        try standIn.workerEnvironment().merging([
            "APPLE_BUNDLE_IDS": TestCredentials.bundleID, "APPLE_ROOT_CERTIFICATES": TestCredentials.rootPath,
            "APPLE_APP_APPLE_ID": "\(TestCredentials.appAppleID)",
        ]) { $1 }
    }

    /// Runs `body` with the system, the stand-in, and the worker's recovery built from its settings.
    static func run(_ body: @Sendable @escaping (SystemHarness, AppStoreServerAPIStandIn, Recovery) async throws -> Void) async throws {
        try await AppStoreServerAPIStandIn.with(bundleIDs: [TestCredentials.bundleID]) { standIn in
            try await SystemHarness.withRecovery(try Self.environment(standIn)) { system, recovery in
                try await body(system, standIn, recovery)
            }
        }
    }

    /// What the worker's `/metrics` shows now.
    static func metrics(_ system: SystemHarness) -> String {
        var buffer: [UInt8] = []
        system.metrics.registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    /// A signed SUBSCRIBED notification (Sandbox) for a new user, signed `minutesAgo`.
    static func subscribed(_ index: Int, minutesAgo: Double, signer: AppleJWSSigner = TestCredentials.signer) throws -> (payload: String, date: Date, user: String) {
        let user = UUID().uuidString.lowercased()
        let date = Date().addingTimeInterval(-minutesAgo * 60)
        let transaction = subscription("88\(index)", user: user, purchased: date)
        let body = try signer.notificationBody(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: transaction, signedDate: date, appAppleId: TestCredentials.appAppleID)
        let payload = try #require(try JSONSerialization.jsonObject(with: body) as? [String: String])["signedPayload"]
        return (try #require(payload), date, user)
    }

    static func add(_ count: Int, to standIn: AppStoreServerAPIStandIn, failedEvery: Int = 3) throws -> [(payload: String, date: Date, user: String)] {
        try (0..<count).map { index in
            let notification = try subscribed(index, minutesAgo: Double(count - index))
            standIn.add(.init(signedPayload: notification.payload, signedDate: notification.date, environment: .sandbox, failed: index % failedEvery == 0))
            return notification
        }
    }

    @Test func notificationsNeverDeliveredAreStoredAndAppliedOnceAndALateWebhookIsADuplicate() async throws {
        try await Self.run { system, standIn, recovery in
            let sent = try Self.add(45, to: standIn)
            try await recovery.runCycle(owner: "w1", interval: Self.interval, logger: TestDatabase.logger)
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE source = 'apple' AND origin = 'recovery'") == 45)
            // The complete history of Sandbox came in three pages of at most 20.
            let pages = standIn.requests.filter { $0.environment == .sandbox && $0.body["onlyFailures"] == nil }.map(\.paginationToken)
            #expect(pages == [nil, "p20", "p40"])
            #expect(standIn.requests.allSatisfy { $0.tokenProblem == nil && $0.bundleID == TestCredentials.bundleID })
            try await system.drain()
            #expect(try await system.outcomes().filter { $0 == "applied" }.count == 45)
            #expect(try await system.entitlement(userID: sent[7].user)["status"] as? String == "active")

            // Apple's retry finally gets through: the same notification is one row.
            let response = try await system.client.execute(
                uri: "/v1/webhooks/appstore-notifications?sandbox=true", method: .post, headers: [.contentType: "application/json"],
                body: AppleRecovery.webhookBody(sent[7].payload))
            #expect(response.status == .ok)
            #expect(try await system.db.scalar("SELECT count(*) FROM events") == 45)

            // Every stream moved its checkpoint; right after, only nothing is due again.
            #expect(try await system.db.scalar("SELECT count(*) FROM recovery_checkpoints WHERE last_success_at IS NOT NULL") == 5)
            let metrics = Self.metrics(system)
            #expect(metrics.contains(#"sluice_recovery_events_total{source="apple",result="stored"} 45"#), "\(metrics)")
            #expect(metrics.contains(#"sluice_recovery_last_success_timestamp_seconds{stream="apple:sandbox:all"}"#))
            let asked = standIn.requests.count
            try await recovery.runCycle(owner: "w1", interval: Self.interval, logger: TestDatabase.logger)
            #expect(standIn.requests.count == asked)
        }
    }

    @Test func aForgedPayloadInTheHistoryIsRejectedAndReported() async throws {
        try await Self.run { system, standIn, recovery in
            let good = try Self.subscribed(1, minutesAgo: 5)
            let forger = AppleJWSSigner(pki: try ApplePKI.generate(name: "Forger"))
            let forged = try Self.subscribed(2, minutesAgo: 4, signer: forger)
            for item in [good, forged] {
                standIn.add(.init(signedPayload: item.payload, signedDate: item.date, environment: .sandbox, failed: false))
            }
            let stream = try #require(recovery.streams.first { $0.name == "apple:sandbox:all" })
            let report = try await stream.recover(Date().addingTimeInterval(-3_600), Date(), false, TestDatabase.logger)
            #expect(report == RecoveryReport(found: 2, alreadyStored: 0, stored: 1, rejected: ["untrusted_chain": 1]))
            #expect(try await system.db.scalar("SELECT count(*) FROM events") == 1)
        }
    }

    @Test func rateLimitsAndServerErrorsAreRetried() async throws {
        try await Self.run { system, standIn, recovery in
            _ = try Self.add(25, to: standIn)
            // Apple's Retry-After is a UNIX time in milliseconds.
            let retryAt = String(Int64((Date().timeIntervalSince1970 + 0.3) * 1000))
            standIn.misbehave { number, _ in
                switch number {
                case 1: .status(429, retryAfter: retryAt)
                case 2, 4: .status(500)
                default: nil
                }
            }
            let stream = try #require(recovery.streams.first { $0.name == "apple:sandbox:all" })
            let report = try await stream.recover(Date().addingTimeInterval(-3_600), Date(), false, TestDatabase.logger)
            #expect(report.stored == 25)
            #expect(standIn.requests.count == 5)
            let metrics = Self.metrics(system)
            #expect(metrics.contains(#"sluice_provider_api_errors_total{provider="apple",status="429"} 1"#))
            #expect(metrics.contains(#"sluice_provider_api_errors_total{provider="apple",status="500"} 2"#))
            #expect(try await system.db.scalar("SELECT count(*) FROM events") == 25)
        }
    }

    @Test func aWindowThatFailsMidwayKeepsItsCheckpointAndTheNextRunStoresTheRestOnce() async throws {
        try await Self.run { system, standIn, recovery in
            _ = try Self.add(45, to: standIn, failedEvery: 1_000)
            let broken = Mutex(true)
            standIn.misbehave { _, request in
                broken.withLock { $0 } && request.paginationToken == "p20" ? .status(500) : nil
            }
            try await recovery.runCycle(owner: "w1", interval: Self.interval, logger: TestDatabase.logger)
            #expect(try await system.db.scalar("SELECT count(*) FROM events") == 20, "the first page was stored")
            let failed = try await system.db.strings(
                "SELECT stream FROM recovery_checkpoints WHERE last_error IS NOT NULL AND last_success_at IS NULL")
            #expect(failed == ["apple:sandbox:all"])

            broken.withLock { $0 = false }
            // The next cycle: a new worker, the same window again.
            try await recovery.runCycle(owner: "w2", interval: Self.interval, logger: TestDatabase.logger)
            #expect(try await system.db.scalar("SELECT count(*) FROM events") == 45)
            #expect(try await system.db.scalar("SELECT count(*) FROM recovery_checkpoints WHERE last_error IS NULL AND last_success_at IS NOT NULL") == 5)
        }
    }

    @Test func twoWorkersNeverRecoverTheSameStreamAtOnce() async throws {
        try await Self.run { system, standIn, recovery in
            _ = try Self.add(30, to: standIn)
            standIn.misbehave { _, _ in .delay(.milliseconds(200)) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for owner in ["w1", "w2", "w3"] {
                    group.addTask { try await recovery.runCycle(owner: owner, interval: Self.interval, logger: TestDatabase.logger) }
                }
                try await group.waitForAll()
            }
            // Each stream's first page was asked for once, whoever asked.
            var firstPages: [String: Int] = [:]
            for request in standIn.requests where request.paginationToken == nil {
                firstPages["\(request.environment.rawValue):\(request.body["onlyFailures"] == nil ? "all" : "failures")", default: 0] += 1
            }
            #expect(firstPages == ["production:all": 1, "production:failures": 1, "sandbox:all": 1, "sandbox:failures": 1])
            #expect(try await system.db.scalar("SELECT count(*) FROM events") == 30)
        }
    }

    @Test func anExpiredSubscriptionWhoseEndingEventWasLostIsCorrected() async throws {
        try await Self.run { system, standIn, recovery in
            let user = UUID().uuidString.lowercased()
            let bought = Date().addingTimeInterval(-70 * 86_400)
            let purchase = subscription("9900", user: user, purchased: bought)
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: purchase, at: bought.addingTimeInterval(60))
            try await system.drain()
            #expect(try await system.entitlement(userID: user)["status"] as? String == "active")

            // Apple says: expired, the customer turned auto-renew off.
            var current = purchase
            current.signedDate = Date().millisecondsSince1970
            var renewal = SampleAppleRenewalInfo(originalTransactionId: "9900", autoRenewStatus: 0)
            renewal.expirationIntent = 1
            standIn.setStatus(
                .init(status: 2, signedTransactionInfo: try TestCredentials.signer.sign(current), signedRenewalInfo: try TestCredentials.signer.sign(renewal)),
                originalTransactionID: "9900")
            // Three workers at once: one of them asks Apple.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for owner in ["w1", "w2", "w3"] {
                    group.addTask { try await recovery.runCycle(owner: owner, interval: Self.interval, logger: TestDatabase.logger) }
                }
                try await group.waitForAll()
            }
            #expect(standIn.requests.filter { $0.path.contains("/subscriptions/") }.count == 1)
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE origin = 'reconciliation' AND type = 'SUBSCRIPTION_STATUS'") == 1)
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "expired")
            #expect(e["expiration_reason"] as? String == "voluntary")
            #expect(e["will_renew"] as? Bool == false)
            #expect(Self.metrics(system).contains(#"sluice_reconciliations_total{outcome="corrected"} 1"#))

            // Checked once: not again within RECONCILE_RECHECK_SECONDS, and now the provider agrees.
            let asked = standIn.requests.filter { $0.path.contains("/subscriptions/") }.count
            try await recovery.runCycle(owner: "w1", interval: Self.interval, logger: TestDatabase.logger)
            #expect(standIn.requests.filter { $0.path.contains("/subscriptions/") }.count == asked)
            let again = try await recovery.reconciler.check(try await recovery.reconciler.candidates(user: user), dryRun: false, logger: TestDatabase.logger)
            #expect(again.checked == ["apple:sandbox:9900": .unchanged])
        }
    }
}
