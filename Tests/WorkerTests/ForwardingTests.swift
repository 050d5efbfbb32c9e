// SPDX-License-Identifier: Apache-2.0
import Crypto
import DevSupport
import Foundation
import HTTPTypes
import NIOCore
import Shared
import Testing
import TestSupport

@testable import Worker
import PostgresNIO
import Prometheus

/// Applied Apple notifications forwarded to real local HTTP servers, with the worker's own settings,
/// handlers and HTTP client.
struct ForwardingTests {
    /// The Standard Webhooks specification's example secret.
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    static func stored(_ system: SystemHarness) async throws -> (payload: [UInt8], uuid: String) {
        let rows = try await system.db.client.query(
            "SELECT payload, external_id FROM events WHERE source = 'apple' ORDER BY id LIMIT 1", logger: TestDatabase.logger)
        for try await (payload, uuid) in rows.decode((ByteBuffer, String).self) { return (Array(payload.readableBytesView), uuid) }
        throw CancellationError()
    }

    @Test func anAppliedNotificationIsForwardedByteForByteAndSigned() async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run(worker: ["FORWARD_TARGETS": sink.url, "FORWARD_SECRET": Self.secret]) { system in
                let user = UUID().uuidString.lowercased()
                try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("21001", user: user))
                try await system.sync(subscription("21002", user: nil), userID: user)
                try await system.drain()
                try await system.forward()

                let stored = try await Self.stored(system)
                let received = try #require(sink.received.first)
                #expect(sink.received.count == 1, "a StoreKit sync is not a notification and is not forwarded")
                #expect(received.body == stored.payload)
                #expect(received.header("Content-Type") == "application/json")
                #expect(received.header("webhook-id") == stored.uuid)
                let timestamp = try #require(received.header("webhook-timestamp").flatMap { Int64($0) })
                #expect(abs(Double(timestamp) - Date().timeIntervalSince1970) < 60)
                let signature = try #require(received.header("webhook-signature"))
                #expect(StandardWebhooksReceiver.verifies(
                    id: stored.uuid, timestamp: timestamp, body: received.body, signatureHeader: signature, secret: Self.secret))
                var tampered = received.body
                tampered[tampered.count / 2] ^= 1
                #expect(!StandardWebhooksReceiver.verifies(
                    id: stored.uuid, timestamp: timestamp, body: tampered, signatureHeader: signature, secret: Self.secret))
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'done'") == 1)
            }
        }
    }

    @Test func withoutASecretForwardsAreUnsigned() async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run(worker: ["FORWARD_TARGETS": sink.url]) { system in
                try await system.notify("DID_RENEW", transaction: subscription("22001", user: nil))
                try await system.drain()
                try await system.forward()
                let received = try #require(sink.received.first)
                #expect(received.header("webhook-signature") == nil)
                #expect(received.header("webhook-id") != nil)
            }
        }
    }

    @Test func aTargetFailingThreeTimesGetsItOnTheFourthAttempt() async throws {
        try await HTTPSink.with { sink in
            sink.answer { $0 <= 3 ? .init(status: .internalServerError) : .ok }
            try await SystemHarness.run(worker: ["FORWARD_TARGETS": sink.url, "MAX_ATTEMPTS": "5"]) { system in
                try await system.notify("DID_RENEW", transaction: subscription("23001", user: nil))
                try await system.drain()
                try await system.forward()
                #expect(sink.received.count == 4)
                #expect(try await system.db.scalar("SELECT attempts FROM deliveries WHERE state = 'done'") == 4)
                #expect(try await system.db.scalar(
                    "SELECT count(*) FROM queue_attempts WHERE queue = 'deliveries' AND http_status = 500") == 3)
            }
        }
    }

    @Test func aDeadDeliveryIsReplayedOnceTheTargetIsBack() async throws {
        try await HTTPSink.with { sink in
            sink.answer { _ in .init(status: .badGateway) }
            try await SystemHarness.run(worker: ["FORWARD_TARGETS": sink.url]) { system in
                try await system.notify("DID_RENEW", transaction: subscription("24001", user: nil))
                try await system.drain()
                try await system.forward()
                #expect(sink.received.count == 3)
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'dead'") == 1)
                let letters = DeadLetters(client: system.db.client, logger: TestDatabase.logger)
                let dead = try #require(try await letters.list(DeadLetterFilter(), limit: 10).first)
                #expect(dead.queue == "deliveries")
                #expect(dead.lastError?.contains("answered 502") == true)
                #expect(try await letters.detail(try #require(QueueItemID(dead.id)))?.history.map(\.httpStatus) == [502, 502, 502])

                sink.answer { _ in .ok }
                let item = try #require(QueueItemID(dead.id))
                #expect(try await letters.replay([item], dryRun: false).replayed == [item])
                try await system.forward()
                #expect(sink.received.count == 4)
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'done' AND attempts = 1") == 1)

                // Replaying again changes nothing: the delivery is done, not dead.
                #expect(try await letters.replay([item], dryRun: false).replayed.isEmpty)
                try await system.forward()
                #expect(sink.received.count == 4)
            }
        }
    }

    @Test func aDeadTargetDelaysNeitherStateNorTheOtherTarget() async throws {
        try await HTTPSink.with { sink in
            // Nothing listens on port 9 of this machine: every connection is refused.
            let targets = "http://127.0.0.1:9/down,\(sink.url)"
            try await SystemHarness.run(worker: ["FORWARD_TARGETS": targets, "FORWARD_TIMEOUT_SECONDS": "2"]) { system in
                let user = UUID().uuidString.lowercased()
                try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("25001", user: user))
                try await system.notify("DID_RENEW", transaction: subscription("25002", user: user))
                try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_25", user: user))
                try await system.drain(workers: 2)
                let entitlements = try await system.entitlements(userID: user)
                #expect(entitlements.count == 3, "\(entitlements)")
                #expect(entitlements.allSatisfy { $0["is_active"] as? Bool == true }, "\(entitlements)")
                try await system.forward(workers: 2)
                #expect(sink.received.count == 2)
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'done'") == 2)
                // What the endpoint answered is kept with the completion (the console shows it).
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'done' AND http_status = 200") == 2)
                #expect(try await system.db.scalar(
                    "SELECT count(*) FROM deliveries WHERE state = 'dead' AND last_error LIKE '%: connection refused by 127.0.0.1:%'") == 2)
                let metrics = String(decoding: system.metrics.registry.emitToBuffer(), as: UTF8.self)
                // Targets are labelled by their endpoint, never by URL (which may hold a token).
                for line in [
                    #"sluice_worker_deliveries_total{target="ep_1",status_class="connection_error"} 6"#,
                    #"sluice_worker_deliveries_total{target="ep_2",status_class="2xx"} 2"#,
                    #"sluice_worker_jobs_total{queue="deliveries",outcome="dead"} 2"#,
                    #"sluice_worker_jobs_total{queue="events",outcome="done"} 3"#,
                ] {
                    #expect(metrics.contains(line), "missing \(line)")
                }
            }
        }
    }

    @Test(arguments: [HTTPResponse.Status.tooManyRequests, .serviceUnavailable])
    func retryAfterIsHonoured(status: HTTPResponse.Status) async throws {
        try await HTTPSink.with { sink in
            // The date is made when the answer is sent: the database this test waits for may take a while on a busy machine.
            @Sendable func httpDate() -> String {
                Date().addingTimeInterval(120).formatted(
                    Date.VerbatimFormatStyle(
                        format: "\(weekday: .abbreviated), \(day: .twoDigits) \(month: .abbreviated) \(year: .defaultDigits) \(hour: .twoDigits(clock: .twentyFourHour, hourCycle: .zeroBased)):\(minute: .twoDigits):\(second: .twoDigits) GMT",
                        locale: Locale(identifier: "en_US_POSIX"), timeZone: .gmt, calendar: Calendar(identifier: .gregorian)))
            }
            let value = status == .tooManyRequests ? "120" : "an HTTP date 120 s ahead"
            sink.answer { _ in .init(status: status, headers: [.retryAfter: status == .tooManyRequests ? "120" : httpDate()]) }
            try await SystemHarness.run(worker: ["FORWARD_TARGETS": sink.url, "RETRY_MAX_SECONDS": "3600"]) { system in
                try await system.notify("DID_RENEW", transaction: subscription("26001", user: nil))
                try await system.drain()
                try await system.forward()
                #expect(sink.received.count == 1, "the next attempt waits for the Retry-After")
                let wait = try await system.db.scalar(
                    "SELECT EXTRACT(EPOCH FROM run_at - now())::bigint FROM deliveries WHERE state = 'pending'")
                // Without the header the next attempt would be due now (RETRY_BASE_SECONDS is 0); a slow machine may take a while to look.
                #expect((30...121).contains(wait), "Retry-After \(value) scheduled the next attempt in \(wait) s")
            }
        }
    }

    @Test func aTargetThatDoesNotAnswerInTimeIsRetried() async throws {
        try await HTTPSink.with { sink in
            sink.answer { $0 == 1 ? .init(status: .ok, delay: .seconds(6)) : .ok }
            try await SystemHarness.run(worker: ["FORWARD_TARGETS": sink.url, "FORWARD_TIMEOUT_SECONDS": "1", "MAX_ATTEMPTS": "5"]) { system in
                try await system.notify("DID_RENEW", transaction: subscription("27001", user: nil))
                try await system.drain()
                try await system.forward()
                #expect(sink.received.count >= 2)
                #expect(try await system.db.scalar(
                    "SELECT count(*) FROM queue_attempts WHERE queue = 'deliveries' AND error LIKE '%: timed out after %'") >= 1)
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'done' AND attempts >= 2") == 1)
            }
        }
    }

    @Test func aLargeAnswerIsReadAndDropped() async throws {
        try await HTTPSink.with { sink in
            sink.answer { _ in .init(status: .ok, body: Array(repeating: UInt8(ascii: "x"), count: 300_000)) }
            try await SystemHarness.run(worker: ["FORWARD_TARGETS": sink.url]) { system in
                try await system.notify("DID_RENEW", transaction: subscription("29001", user: nil))
                try await system.drain()
                try await system.forward()
                #expect(sink.received.count == 1)
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'done' AND attempts = 1") == 1)
            }
        }
    }

    /// A signed forward goes only where it was configured to go: a redirect is a failed attempt.
    @Test func redirectsAreNotFollowed() async throws {
        try await HTTPSink.with { sink in
            sink.answer { _ in .init(status: .found, headers: [.location: sink.url + "/elsewhere"]) }
            try await SystemHarness.run(worker: ["FORWARD_TARGETS": sink.url]) { system in
                try await system.notify("DID_RENEW", transaction: subscription("29101", user: nil))
                try await system.drain()
                try await system.forward()
                #expect(sink.received.count == 3)
                #expect(try await system.db.scalar(
                    "SELECT count(*) FROM deliveries WHERE state = 'dead' AND last_error LIKE '%answered 302%'") == 1)
            }
        }
    }

    @Test func metricsAndLogsNameATargetWithoutItsSecrets() {
        #expect(ForwardTarget.label(for: "https://user:token@hooks.example.com:8443/apple?key=s3cret") == "https://hooks.example.com:8443/…")
        #expect(ForwardTarget.label(for: "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX") == "https://hooks.slack.com/…")
        #expect(ForwardTarget.label(for: "http://127.0.0.1/") == "http://127.0.0.1")
    }

    @Test func retryAfterReadsSecondsAndDatesWithinTheCap() {
        let now = Date(timeIntervalSince1970: 1_784_000_000)
        #expect(RetryAfter.seconds("120", now: now, maximum: 3_600) == 120)
        #expect(RetryAfter.seconds("999999", now: now, maximum: 3_600) == 3_600)
        #expect(RetryAfter.seconds("-5", now: now, maximum: 3_600) == 0)
        let date = now.addingTimeInterval(90)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        #expect(RetryAfter.seconds(formatter.string(from: date), now: now, maximum: 3_600) == 90)
        #expect(RetryAfter.seconds("soon", now: now, maximum: 3_600) == nil)
    }

    @Test func aNotificationWhoseApplyRollsBackIsNotForwarded() async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run(worker: ["FORWARD_TARGETS": sink.url]) { system in
                try await system.notify("DID_RENEW", transaction: subscription("28001", user: nil))
                let job = try #require(try await system.pool.queue.dequeue(limit: 1, owner: "dies").first)
                let crash = JobCompletion(job: job, queue: system.pool.queue, logger: TestDatabase.logger, beforeComplete: { throw Crash() })
                let handler = AppleEventHandler(logger: TestDatabase.logger, outbox: ForwardOutbox(leeway: 0, sandboxAccess: .anybody, onCreated: {}))
                await #expect(throws: (any Error).self) { try await handler.handle(job, completion: crash) }
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries") == 0)
            }
        }
    }

    @Test(arguments: [
        ["FORWARD_TARGETS": "ftp://example.com/hook"], ["FORWARD_TARGETS": "/relative/path"], ["FORWARD_TARGETS": "https://ok.example,nonsense"],
        ["FORWARD_SECRET": "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], ["FORWARD_SECRET": "whsec_not base64!"], ["FORWARD_SECRET": "whsec_"],
        ["FORWARD_SECRET": "whsec_" + Data(repeating: 9, count: 16).base64EncodedString()],
        ["FORWARD_TIMEOUT_SECONDS": "0"],
    ])
    func badForwardSettingsAreRefusedByName(environment: [String: String]) throws {
        let name = try #require(environment.keys.first)
        let error = try #require(throws: ConfigurationError.self) {
            try WorkerSettings(environment: EnvironmentValues(environment.merging(["DATABASE_URL": "postgres://x@localhost/x"]) { $1 }))
        }
        #expect(error.variable == name)
        let value = environment[name]!
        if value.count > 6 { #expect(!error.description.contains(value), "the message never repeats the value") }
    }

    struct Crash: Error {}
}
