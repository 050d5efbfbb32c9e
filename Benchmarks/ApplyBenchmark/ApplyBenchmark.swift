// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import DevSupport
import Foundation
import Logging
import PostgresNIO
import Shared

/// How fast a real `worker run` process applies a backlog of realistic mixed events (Stripe
/// subscriptions and payments, Apple subscriptions and renewals signed by a test PKI) through the
/// real handlers; and, as the baseline in the same run, how fast the same process drains as many
/// jobs that only need completing (a kind with no state change: `TEST` notifications).
@main
struct ApplyBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ApplyBenchmark", abstract: "Events applied per second by `worker run` (needs DATABASE_URL).")

    @Option(help: "Events in the backlog.") var events = 50_000
    @Option(help: "Jobs in flight (WORKER_CONCURRENCY).") var concurrency = 16
    @Option(help: "Worker processes.") var processes = 1
    @Option(help: "The worker binary.") var worker = ".build-release/release/worker"

    func run() async throws {
        guard let text = ProcessInfo.processInfo.environment["DATABASE_URL"] else {
            throw ValidationError("DATABASE_URL is required (scripts/with-postgres sets one)")
        }
        let logger = { var l = Logger(label: "bench"); l.logLevel = .error; return l }()
        let server = try DatabaseURL(text)
        let signer = AppleJWSSigner(pki: try ApplePKI.generate(name: "Apply Bench"))

        print("apply: \(events) events, \(processes) worker process(es) × \(concurrency) in flight, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        let baseline = try await measure(server: server, logger: logger, label: "TEST notifications (complete only)") { count in
            try (0..<count).map { index in
                let body = try JSONEncoder().encode(["signedPayload": try signer.sign(SampleAppleNotification(type: "TEST"))])
                return EventRecord(source: .apple, externalID: "test-\(index)", type: "TEST", payload: ByteBuffer(data: body))
            }
        }
        let mixed = try await measure(server: server, logger: logger, label: "mixed Stripe and Apple events") { count in
            try Self.mixedEvents(count, signer: signer)
        }
        print(String(format: "  realistic apply / complete-only: %.2fx", mixed / baseline))
    }

    /// Fills a fresh database with `make(events)`, runs the workers until every job is done.
    private func measure(
        server: DatabaseURL, logger: Logger, label: String, make: (Int) throws -> [EventRecord]
    ) async throws -> Double {
        var url = server
        url.database = "sluice_apply_\(UInt32.random(in: 0...UInt32.max))"
        let name = url.database
        try await DatabaseSession.with(server, logger: logger) { try await $0.query("CREATE DATABASE \(unescaped: name)", logger: logger) }
        let records = try make(events)
        try await DatabaseSession.with(url, logger: logger) { client in
            try await Migrator(client: client, logger: logger).migrate(try Migration.load(from: Self.sqlDirectory()))
            let store = EventStore(client: client, logger: logger)
            for start in stride(from: 0, to: records.count, by: 500) {
                _ = try await store.insert(Array(records[start..<min(start + 500, records.count)]))
            }
            try await client.query("VACUUM ANALYZE events", logger: logger)
        }
        let workers = try (0..<processes).map { _ in try startWorker(url: url) }
        let started = ContinuousClock.now
        let (done, dead) = try await DatabaseSession.with(url, logger: logger) { client -> (Int64, Int64) in
            while true {
                var counts: (Int64, Int64) = (0, 0)
                for try await row in try await client.query(
                    "SELECT count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE state = 'dead' OR attempts > 1) FROM events",
                    logger: logger
                ).decode((Int64, Int64).self) {
                    counts = row
                }
                if counts.0 + counts.1 >= Int64(records.count) || started.duration(to: .now) > .seconds(600) { return counts }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        let elapsed = started.duration(to: .now)
        for worker in workers { worker.terminate(); worker.waitUntilExit() }
        try await DatabaseSession.with(server, logger: logger) { try await $0.query("DROP DATABASE \(unescaped: name) WITH (FORCE)", logger: logger) }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = Double(done) / seconds
        print(String(format: "  %@: %8.0f events/s (%lld done, %lld failed or retried, %.1f s)", label, rate, done, dead, seconds))
        return rate
    }

    private func startWorker(url: DatabaseURL) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: worker)
        process.arguments = ["run"]
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = url.urlString
        environment["WORKER_CONCURRENCY"] = "\(concurrency)"
        environment["LOG_LEVEL"] = "error"
        environment["METRICS_PORT"] = "0"
        process.environment = environment
        try process.run()
        return process
    }

    static func sqlDirectory() -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("sql")
    }

    /// Half Stripe (a subscription's life: created, renewed, updated; and one-time payments),
    /// half Apple (SUBSCRIBED then renewals and renewal-status changes), in arrival order.
    static func mixedEvents(_ count: Int, signer: AppleJWSSigner) throws -> [EventRecord] {
        let start = Date().addingTimeInterval(-86_400)
        var records: [EventRecord] = []
        records.reserveCapacity(count)
        var index = 0
        while records.count < count {
            let entity = index / 5
            let step = index % 5
            let time = start.addingTimeInterval(Double(index))
            if index % 2 == 0 {
                let object: [String: Any]
                let type: String
                if entity % 3 == 0 {
                    type = "payment_intent.succeeded"
                    object = SampleStripeEvents.paymentIntent(id: "pi_\(entity)_\(step)", userID: "user_\(entity)")
                } else {
                    type = "customer.subscription.updated"
                    object = ["id": "sub_\(entity)", "object": "subscription", "status": step == 3 ? "past_due" : "active",
                              "customer": "cus_\(entity)", "cancel_at_period_end": step == 4,
                              "current_period_end": Int(time.timeIntervalSince1970) + 2_592_000,
                              "metadata": ["user_id": "user_\(entity)", "product_id": "pro.monthly"]]
                }
                let body = try SampleStripeEvents.event(id: "evt_\(index)", type: type, created: time, object: object)
                let envelope = try StripeEventEnvelope.decode(ByteBuffer(data: body))
                records.append(envelope.record(payload: ByteBuffer(data: body)))
            } else {
                let original = "\(3_000_000 + entity)"
                var transaction = SampleAppleTransaction(
                    transactionId: step == 0 ? original : "\(3_000_000 + entity)\(step)", originalTransactionId: original,
                    purchaseDate: time, signedDate: time, appAccountToken: UUID().uuidString.lowercased())
                transaction.signedDate = time.appleMilliseconds
                let type = ["SUBSCRIBED", "DID_RENEW", "DID_CHANGE_RENEWAL_STATUS", "DID_RENEW", "DID_CHANGE_RENEWAL_PREF"][step]
                let uuid = UUID().uuidString.lowercased()
                let body = try signer.notificationBody(
                    type: type, subtype: type == "DID_CHANGE_RENEWAL_STATUS" ? "AUTO_RENEW_DISABLED" : nil, uuid: uuid,
                    transaction: transaction, renewal: SampleAppleRenewalInfo(originalTransactionId: original, signedDate: time), signedDate: time)
                records.append(EventRecord(
                    source: .apple, externalID: uuid, type: type, environment: "Sandbox", eventTime: time, orderingKey: original,
                    payload: ByteBuffer(data: body)))
            }
            index += 1
        }
        return records
    }
}
