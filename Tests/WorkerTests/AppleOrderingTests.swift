// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// Providers do not deliver in order, workers run concurrently, processes crash: the newest state
/// wins and every effect happens once.
@Suite(.timeLimit(.minutes(3)))
struct AppleOrderingTests {
    static let start = Date().addingTimeInterval(-86_400).rounded
    static func at(_ minutes: Double) -> Date { start.addingTimeInterval(minutes * 60) }

    @Test func aRenewalAppliedBeforeItsSubscribedWins() async throws {
        try await SystemHarness.run { system in
            let user = UUID().uuidString.lowercased()
            var renewal = subscription("11002", user: user, purchased: Self.at(30), expires: Self.at(30).addingTimeInterval(30 * 86_400))
            renewal.originalTransactionId = "11001"
            try await system.notify("DID_RENEW", transaction: renewal, at: Self.at(30))
            try await system.drain()
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("11001", user: user, purchased: Self.at(0)), at: Self.at(0))
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "active")
            #expect(e["expires_at"] as? String == rfc3339(Self.at(30).addingTimeInterval(30 * 86_400)))
            #expect(try await system.outcomes() == ["applied", "stale"])
            // The late SUBSCRIBED's payment is still in the ledger.
            #expect(try await system.transactions(userID: user).count == 2)
        }
    }

    /// A REFUND applied before the SUBSCRIBED of the same purchase (Apple retries each on its own
    /// schedule): the late SUBSCRIBED must not give the access back.
    @Test func aRefundAppliedBeforeItsSubscribedKeepsTheAccessEnded() async throws {
        try await SystemHarness.run { system in
            let user = UUID().uuidString.lowercased()
            var refunded = subscription("13001", user: user, purchased: Self.at(0))
            refunded.revocationDate = Self.at(2).millisecondsSince1970
            refunded.revocationReason = 0
            try await system.notify("REFUND", transaction: refunded, at: Self.at(2))
            try await system.drain()
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("13001", user: user, purchased: Self.at(0)), at: Self.at(0))
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "refunded")
            #expect(e["is_active"] as? Bool == false)
            #expect(try await system.outcomes() == ["applied", "stale"])
            let t = try await system.transactions(userID: user)
            #expect(t.map { $0["status"] as? String } == ["refunded"])
        }
    }

    /// The first period of `first` ends here; `renewal` pays for the next.
    static let firstEnd = at(0).addingTimeInterval(30 * 86_400)

    /// The renewal of `first` by `renewal` (a DID_RENEW signed an hour in), applied.
    static func renew(_ first: String, by renewal: String, user: String, on system: SystemHarness) async throws {
        var renewed = subscription(renewal, user: user, purchased: firstEnd, expires: firstEnd.addingTimeInterval(30 * 86_400))
        renewed.originalTransactionId = first
        try await system.notify("DID_RENEW", transaction: renewed, at: at(60))
        try await system.drain()
    }

    /// `first`'s first period as Apple signs it once refunded half an hour in.
    static func refundedFirstPeriod(_ first: String, user: String) -> SampleAppleTransaction {
        var refunded = subscription(first, user: user, purchased: at(0), expires: firstEnd)
        refunded.revocationDate = at(30).millisecondsSince1970
        refunded.revocationReason = 0
        return refunded
    }

    /// Each row's status by its provider transaction id.
    static func statuses(_ rows: [[String: Any]]) -> [String: String] {
        Dictionary(uniqueKeysWithValues: rows.map { ($0["provider_transaction_id"] as? String ?? "?", $0["status"] as? String ?? "?") })
    }

    /// A REFUND of the first period signed before the renewal that followed it, delivered after
    /// that renewal (Apple retried it through an outage): stale for the entitlement, whose newer
    /// period keeps its access, but the refunded period's ledger row is still refunded (and its
    /// currency grant taken back); its reversal, as late, makes it paid again.
    @Test func aRefundOfAnEarlierPeriodDeliveredAfterTheRenewalStillRefundsItsRow() async throws {
        try await SystemHarness.run { system in
            let user = UUID().uuidString.lowercased()
            let firstEnd = Self.firstEnd
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("14001", user: user, purchased: Self.at(0), expires: firstEnd), at: Self.at(0))
            try await Self.renew("14001", by: "14002", user: user, on: system)
            try await system.notify("REFUND", transaction: Self.refundedFirstPeriod("14001", user: user), at: Self.at(30))
            try await system.drain()
            var e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "active" && e["is_active"] as? Bool == true, "\(e)")
            #expect(Self.statuses(try await system.transactions(userID: user)) == ["14001": "refunded", "14002": "succeeded"])
            #expect(try await system.outcomes() == ["applied", "applied", "stale"])

            try await system.notify("REFUND_REVERSED", transaction: subscription("14001", user: user, purchased: Self.at(0), expires: firstEnd), at: Self.at(40))
            try await system.drain()
            #expect(Self.statuses(try await system.transactions(userID: user)) == ["14001": "succeeded", "14002": "succeeded"])
            e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "active")
        }
    }

    /// The first period's SUBSCRIBED never came, its renewal did, then a late REFUND of that first
    /// period: its row is made refunded, and the SUBSCRIBED arriving last (stale) leaves it so.
    @Test func aLateRefundOfAPeriodNeverSeenMakesItsRowRefunded() async throws {
        try await SystemHarness.run { system in
            let user = UUID().uuidString.lowercased()
            try await Self.renew("15001", by: "15002", user: user, on: system)
            try await system.notify("REFUND", transaction: Self.refundedFirstPeriod("15001", user: user), at: Self.at(30))
            try await system.drain()
            try await system.notify(
                "SUBSCRIBED", "INITIAL_BUY", transaction: subscription("15001", user: user, purchased: Self.at(0), expires: Self.firstEnd), at: Self.at(0))
            try await system.drain()
            #expect(Self.statuses(try await system.transactions(userID: user)) == ["15001": "refunded", "15002": "succeeded"])
            #expect(try await system.entitlement(userID: user)["is_active"] as? Bool == true)
        }
    }

    /// A period refunded, and a later notification about its transaction (auto-renew turned off)
    /// delivered before the REFUND: that notification's signed copy carries the refund, so the row
    /// is refunded then, and the late REFUND (stale) leaves it so.
    @Test func aLaterCopyOfARefundedTransactionRefundsItsRowBeforeTheRefundArrives() async throws {
        try await SystemHarness.run { system in
            let user = UUID().uuidString.lowercased()
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("16001", user: user, purchased: Self.at(0)), at: Self.at(0))
            try await system.drain()
            var revoked = subscription("16001", user: user, purchased: Self.at(0))
            revoked.revocationDate = Self.at(10).millisecondsSince1970
            revoked.revocationReason = 0
            try await system.notify("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", transaction: revoked, at: Self.at(20))
            try await system.drain()
            var t = try await system.transactions(userID: user)
            #expect(t.map { $0["status"] as? String } == ["refunded"])
            try await system.notify("REFUND", transaction: revoked, at: Self.at(10))
            try await system.drain()
            t = try await system.transactions(userID: user)
            #expect(t.map { $0["status"] as? String } == ["refunded"])
            #expect(try await system.entitlement(userID: user)["is_active"] as? Bool == false)
        }
    }

    /// A SUBSCRIBED and its REFUND applied back to back (in one batch at batch 16) end with the
    /// access off whatever millisecond the period ends at: the expiry chosen is one whose trip
    /// through the database comes back later than Apple's, which made the refund's period look
    /// "not in force" (EnvironmentTests failed about one run in a hundred on it).
    @Test func aRefundRightBehindItsSubscriptionEndsTheAccessWhateverItsExpiry() async throws {
        try await SystemHarness.run { system in
            let user = UUID().uuidString.lowercased()
            let (expiry, _) = try AppleDeciderTests.expiryReadBackLater(from: Date().addingTimeInterval(30 * 86_400))
            let bought = subscription("14001", user: user, purchased: Self.at(0), expires: expiry)
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: bought, at: Self.at(0))
            var refunded = bought
            refunded.revocationDate = Self.at(1).millisecondsSince1970
            try await system.notify("REFUND", transaction: refunded, at: Self.at(1))
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "refunded")
            #expect(e["is_active"] as? Bool == false)
            #expect(try await system.outcomes() == ["applied", "applied"])
        }
    }

    @Test func anOlderExpiredAfterANewerRenewalChangesNothing() async throws {
        try await SystemHarness.run { system in
            let user = UUID().uuidString.lowercased()
            let first = subscription("12001", user: user, purchased: Self.at(0))
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: first, at: Self.at(0))
            var renewal = subscription("12002", user: user, purchased: Self.at(20))
            renewal.originalTransactionId = "12001"
            try await system.notify("DID_RENEW", transaction: renewal, at: Self.at(20))
            try await system.drain()
            try await system.notify("EXPIRED", "VOLUNTARY", transaction: first, at: Self.at(10))
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "active")
            #expect(e["is_active"] as? Bool == true)
            #expect(try await system.outcomes() == ["applied", "applied", "stale"])
        }
    }

    /// 200 notifications of one subscription, posted in random order and applied by 8 concurrent
    /// workers, end in the state that applying them in order gives (the reference model).
    @Test func twoHundredEventsInRandomOrderWithEightWorkersEndAsInOrder() async throws {
        let user = UUID().uuidString.lowercased()
        let events = Self.history(count: 200, user: user)
        // The reference: the decisions applied in order, in memory.
        var reference = AppleDecider.State(userID: user)
        var payments = Set<String>()
        for (index, event) in events.enumerated() {
            let decided = AppleDecider.decide(event.decoded(id: Int64(index)), reference)
            reference.entitlement = decided.entitlements.first ?? reference.entitlement
            payments.formUnion(decided.transactions.filter { _ in AppleDecider.reportsPayment(AppleNotificationType(rawValue: event.type)) }.map(\.providerTransactionID))
        }
        let expected = try #require(reference.entitlement)
        let paymentCount = payments.count

        try await SystemHarness.run { system in
            for event in events.shuffled() {
                try await system.notify(event.type, event.subtype, transaction: event.transaction, renewal: event.renewal, at: event.time)
            }
            try await system.drain(workers: 8)
            let e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == expected.status.rawValue)
            #expect(e["will_renew"] as? Bool == expected.willRenew)
            #expect(e["product_id"] as? String == expected.productID)
            #expect(e["expires_at"] as? String == expected.expiresAt.map(rfc3339))
            #expect(try await system.db.scalar("SELECT count(*) FROM applied_events") == 200)
            #expect(try await system.transactions(userID: user).count == paymentCount)
        }
    }

    /// A worker that applied an event but lost its lease before completing (it stalled, another
    /// worker took the job) rolls everything back: the event takes effect once.
    @Test func aWorkerThatLostItsLeaseMidTransactionLeavesNoEffect() async throws {
        try await SystemHarness.run { system in
            let user = UUID().uuidString.lowercased()
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("13001", user: user), at: Date())
            let queue = JobQueue(client: system.db.client, name: .events, configuration: .init(leaseSeconds: 0.5), logger: TestDatabase.logger)
            let stalled = try #require(try await queue.dequeue(limit: 1, owner: "stalled").first)
            let handler = AppleEventHandler(logger: TestDatabase.logger)
            // The stalled worker applies inside its transaction, then waits past its lease until
            // another worker holds the job (on a loaded machine a fixed pause may end too soon) …
            let takenOver = AsyncStream<Void>.makeStream()
            let stalledAttempt = Task {
                try await handler.handle(stalled, completion: JobCompletion(
                    job: stalled, queue: queue, logger: TestDatabase.logger, beforeComplete: { for await _ in takenOver.stream {} }))
            }
            let deadline = ContinuousClock.now + .seconds(30)
            while try await queue.rescueExpiredLeases() == 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            // … another worker takes the job over and applies it; the stalled one then tries to complete.
            let fresh = try #require(try await queue.dequeue(limit: 1, owner: "fresh").first)
            takenOver.continuation.finish()
            await system.pool.execute(fresh)
            await #expect(throws: (any Error).self) { try await stalledAttempt.value }
            #expect(try await system.db.scalar("SELECT count(*) FROM transactions") == 1)
            #expect(try await system.db.scalar("SELECT count(*) FROM transaction_status_history") == 1)
            #expect(try await system.db.scalar("SELECT count(*) FROM applied_events") == 1)
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 1)
            #expect(try await system.entitlement(userID: user)["status"] as? String == "active")
        }
    }

    /// An aborted transaction (the process died between apply and complete) and its retry: one effect.
    @Test func anAbortedApplyThenItsRetryTakeEffectOnce() async throws {
        try await SystemHarness.run { system in
            let user = UUID().uuidString.lowercased()
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("14001", user: user), at: Date())
            let job = try #require(try await system.pool.queue.dequeue(limit: 1, owner: "dies").first)
            let crash = JobCompletion(job: job, queue: system.pool.queue, logger: TestDatabase.logger, beforeComplete: { throw Crash() })
            await #expect(throws: (any Error).self) { try await AppleEventHandler(logger: TestDatabase.logger).handle(job, completion: crash) }
            #expect(try await system.db.scalar("SELECT count(*) FROM transactions") == 0)
            _ = try await system.pool.queue.fail(job, error: "crashed")
            try await system.db.client.query("UPDATE events SET run_at = now()", logger: TestDatabase.logger)
            try await system.drain()
            #expect(try await system.db.scalar("SELECT count(*) FROM transactions") == 1)
            #expect(try await system.db.scalar("SELECT count(*) FROM applied_events") == 1)
            #expect(try await system.entitlement(userID: user)["status"] as? String == "active")
        }
    }

    struct Crash: Error {}

    // MARK: A subscription's history

    struct Notification {
        var type: String
        var subtype: String?
        var time: Date
        var transaction: SampleAppleTransaction
        var renewal: SampleAppleRenewalInfo

        func decoded(id: Int64) -> AppleDecider.Event {
            let json = JSONEncoder()
            var tx = transaction
            tx.signedDate = time.millisecondsSince1970
            var r = renewal
            r.signedDate = time.millisecondsSince1970
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .millisecondsSince1970
            return AppleDecider.Event(
                eventID: id, type: AppleNotificationType(rawValue: type), subtype: subtype.map(AppleSubtype.init(rawValue:)), time: time, environment: .sandbox,
                transaction: try! decoder.decode(AppleTransactionPayload.self, from: json.encode(tx)),
                renewal: try! decoder.decode(AppleRenewalInfoPayload.self, from: json.encode(r)))
        }
    }

    /// A SUBSCRIBED, then renewals, auto-renew switched off and on, billing trouble and product changes.
    static func history(count: Int, user: String) -> [Notification] {
        var latest = subscription("20000", user: user, purchased: at(0))
        var autoRenew = 1
        var product = "pro.monthly"
        var graceUntil: Date?
        var result = [Notification(type: "SUBSCRIBED", subtype: "INITIAL_BUY", time: at(0), transaction: latest,
                                   renewal: .init(originalTransactionId: "20000"))]
        for index in 1..<count {
            let time = at(Double(index))
            var type = "DID_RENEW"
            var subtype: String?
            switch index % 5 {
            case 0:
                product = index % 10 == 0 ? "pro.yearly" : "pro.monthly"
                latest = subscription("\(20000 + index)", user: user, product: product, purchased: time)
                latest.originalTransactionId = "20000"
                autoRenew = 1
                graceUntil = nil
            case 1: type = "DID_CHANGE_RENEWAL_STATUS"; subtype = "AUTO_RENEW_DISABLED"; autoRenew = 0
            case 2: type = "DID_CHANGE_RENEWAL_STATUS"; subtype = "AUTO_RENEW_ENABLED"; autoRenew = 1
            case 3: type = "DID_FAIL_TO_RENEW"; subtype = "GRACE_PERIOD"; graceUntil = time.addingTimeInterval(16 * 86_400)
            default: type = "DID_CHANGE_RENEWAL_PREF"; subtype = "UPGRADE"
            }
            // Like Apple's, each renewal info states the whole billing situation at its time.
            var renewal = SampleAppleRenewalInfo(
                originalTransactionId: "20000", productId: product,
                autoRenewProductId: type == "DID_CHANGE_RENEWAL_PREF" ? "pro.yearly" : product, autoRenewStatus: autoRenew)
            renewal.isInBillingRetryPeriod = graceUntil != nil
            renewal.gracePeriodExpiresDate = graceUntil?.millisecondsSince1970
            result.append(Notification(type: type, subtype: subtype, time: time, transaction: latest, renewal: renewal))
        }
        return result
    }
}
