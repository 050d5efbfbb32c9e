// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Glibc
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// `examples/receiver/receiver.py`, run for real with the `standardwebhooks` library from PyPI
/// (scripts/test installs examples/receiver/requirements.txt into a virtual environment and names
/// its Python in `SLUICE_RECEIVER_PYTHON`): Sluice's deliveries verify with the library, and a
/// delivery signed with another secret is refused.
@Suite(.timeLimit(.minutes(3)))
struct ReceiverExampleTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func theExampleReceiverVerifiesSluicesDeliveriesWithTheStandardWebhooksLibrary() async throws {
        let python = try #require(
            ProcessInfo.processInfo.environment["SLUICE_RECEIVER_PYTHON"],
            "SLUICE_RECEIVER_PYTHON is not set: run the tests with scripts/test, which installs examples/receiver/requirements.txt")
        let secret = Endpoint.newSecret()
        let receiver = try await ExampleReceiver.onAFreePort(python: python, secret: secret)
        defer { receiver.stop() }
        let port = receiver.port

        try await SystemHarness.run(worker: ["MAX_ATTEMPTS": "1"]) { system in
            let store = EndpointStore(client: system.db.client, logger: TestDatabase.logger)
            let url = "http://127.0.0.1:\(port)/sluice"
            let good = try await store.add(url: url, changes: .init(allowPrivate: true), secret: secret)
            let forged = try await store.add(url: url, changes: .init(eventTypes: ["entitlement.granted"], allowPrivate: true), secret: Endpoint.newSecret())
            try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_61", user: "u61", charge: "ch_61"))
            try await system.drain()
            try await system.stripe("charge.refunded", StripeObjects.charge("ch_61", paymentIntent: "pi_61"))
            try await system.drain()
            try await system.forward()
            #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'done' AND endpoint_id = \(good.id)") == 4)
            #expect(try await system.db.scalar(
                "SELECT count(*) FROM deliveries d JOIN queue_attempts a ON a.job_id = d.id AND a.queue = 'deliveries' WHERE d.endpoint_id = \(forged.id) AND a.http_status = 400") == 1)
        }
        #expect(Set(receiver.handled()) == ["entitlement.granted", "transaction.succeeded", "entitlement.refunded", "transaction.refunded"])
    }

    /// The "done when" of entitlement events, with the built binaries: `ingest` and `worker run` as
    /// processes, an endpoint added with `worker endpoints add` while the worker runs, the example
    /// receiver verifying with the standardwebhooks library. A Stripe web purchase and its refund,
    /// an Apple subscription with a billing issue, its recovery, a product change and a renewal, and
    /// access that ends by the clock each arrive as documented; `disable` stops deliveries and
    /// `enable` resumes them.
    @Test func theBuiltWorkerAnnouncesToAnEndpointAddedWhileItRuns() async throws {
        let python = try #require(ProcessInfo.processInfo.environment["SLUICE_RECEIVER_PYTHON"], "run the tests with scripts/test")
        try await TestDatabase.with { db in
            let ingest = try await ServiceProcess("ingest", environment: TestCredentials.ingestEnvironment(databaseURL: db.url.urlString))
            defer { ingest.stop() }
            let worker = try await ServiceProcess("worker", arguments: ["run"], environment: [
                "DATABASE_URL": db.url.urlString, "RETRY_BASE_SECONDS": "0.2", "RETRY_MAX_SECONDS": "1", "WORKER_POLL_INTERVAL_MS": "200",
                "ENTITLEMENT_LEEWAY_SECONDS": "0", "CLOCK_SWEEP_INTERVAL_SECONDS": "1", "LOG_LEVEL": "error",
            ])
            defer { worker.stop() }
            let port = try ServiceProcess.freePort()
            let added = try await OperatorCommandTests.worker(db, ["endpoints", "add", "http://127.0.0.1:\(port)/sluice", "--allow-private", "--description", "receiver", "--json"])
            #expect(added.status == 0, "\(added.stderr)")
            let endpoint = try #require(try OperatorCommandTests.json(added.stdout) as? [String: Any])
            let secret = try #require(endpoint["secret"] as? String)
            let id = try #require(endpoint["id"] as? String)
            let receiver = try await ExampleReceiver(python: python, secret: secret, port: port)
            defer { receiver.stop() }

            func stripe(_ type: String, _ object: [String: Any]) async throws {
                let body = try Array(SampleStripeEvents.event(id: "evt_\(UUID().uuidString.prefix(10))", type: type, object: object))
                let request = RawRequest.post("/v1/webhooks/stripe", headers: [
                    ("Content-Type", "application/json"), ("Stripe-Signature", StripeSigner.header(body: body, secret: TestCredentials.stripeSecret)),
                ], body: body)
                #expect(try await RawHTTPConnection.exchange(port: ingest.port, request)?.status == 200)
            }
            func apple(_ type: String, _ subtype: String? = nil, _ tx: SampleAppleTransaction, renewal: SampleAppleRenewalInfo? = nil) async throws {
                var tx = tx
                tx.signedDate = Date().millisecondsSince1970
                let body = try TestCredentials.signer.notificationBody(
                    type: type, subtype: subtype, transaction: tx, renewal: renewal, appAppleId: TestCredentials.appAppleID)
                let request = RawRequest.post(
                    "/v1/webhooks/appstore-notifications?sandbox=true", headers: [("Content-Type", "application/json")], body: Array(body))
                #expect(try await RawHTTPConnection.exchange(port: ingest.port, request)?.status == 200)
                try await Task.sleep(for: .milliseconds(50))  // Apple's signedDate orders them: keep them apart
            }
            func waitFor(_ count: Int) async throws -> [String] {
                let deadline = ContinuousClock.now + .seconds(30)
                while receiver.handled().count < count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
                return receiver.handled()
            }

            try await stripe("payment_intent.succeeded", SampleStripeEvents.paymentIntent(id: "pi_p1", userID: "web_1", latestCharge: "ch_p1"))
            // An entitlement's events leave in order; its payment's are another order key, so the two may cross.
            #expect(Set(try await waitFor(2)) == ["entitlement.granted", "transaction.succeeded"])
            try await stripe("charge.refunded", [
                "id": "ch_p1", "object": "charge", "payment_intent": "pi_p1", "amount": 999, "amount_refunded": 999, "refunded": true,
                "customer": "cus_1",
            ])
            #expect(Set(try await waitFor(4).suffix(2)) == ["entitlement.refunded", "transaction.refunded"])

            let user = UUID().uuidString.lowercased()
            let first = SampleAppleTransaction(
                transactionId: "71001", bundleId: TestCredentials.bundleID, purchaseDate: Date().addingTimeInterval(-86_400), appAccountToken: user)
            try await apple("SUBSCRIBED", "INITIAL_BUY", first)
            try await apple("DID_FAIL_TO_RENEW", nil, first)
            var renewal = SampleAppleTransaction(
                transactionId: "71002", originalTransactionId: "71001", bundleId: TestCredentials.bundleID, appAccountToken: user)
            try await apple("DID_RENEW", "BILLING_RECOVERY", renewal)
            try await apple("DID_CHANGE_RENEWAL_PREF", "UPGRADE", renewal,
                            renewal: .init(originalTransactionId: "71001", productId: "pro.monthly", autoRenewProductId: "pro.yearly"))
            renewal = SampleAppleTransaction(
                transactionId: "71003", originalTransactionId: "71001", bundleId: TestCredentials.bundleID, productId: "pro.yearly",
                expiresDate: Date().addingTimeInterval(365 * 86_400), appAccountToken: user)
            try await apple("DID_RENEW", nil, renewal)
            let appleTypes = try await waitFor(12).dropFirst(4).filter { $0.hasPrefix("entitlement.") }
            #expect(appleTypes == [
                "entitlement.granted", "entitlement.billing_issue", "entitlement.recovered", "entitlement.product_changed", "entitlement.renewed",
            ])

            // Disabled while running: nothing leaves; enabled: what waited leaves.
            #expect(try await OperatorCommandTests.worker(db, ["endpoints", "disable", id]).status == 0)
            // The clock's lease is held here until the resend is done, so that the expiry follows
            // the grant it ends whatever the machine's load: a 3 s expiry announced before the
            // resend brought the grant (a loaded run took 22 s) is sent first, and rightly so.
            // Taken from the running worker (which MaintenanceLease never does), given back by it.
            let clock = MaintenanceLease(client: db.client, task: "clock-expiry", owner: "test", logger: TestDatabase.logger)
            try await db.client.query(
                """
                INSERT INTO maintenance_leases (task, leased_by, leased_until) VALUES (\(clock.task), \(clock.owner), now() + interval '1 hour')
                ON CONFLICT (task) DO UPDATE SET leased_by = EXCLUDED.leased_by, leased_until = EXCLUDED.leased_until
                """, logger: TestDatabase.logger)
            let before = receiver.handled().count
            let short = SampleAppleTransaction(
                transactionId: "72001", bundleId: TestCredentials.bundleID, expiresDate: Date().addingTimeInterval(3),
                appAccountToken: UUID().uuidString.lowercased())
            try await apple("SUBSCRIBED", "INITIAL_BUY", short)
            try await Task.sleep(for: .seconds(2))
            #expect(receiver.handled().count == before, "a disabled endpoint receives nothing")
            // Created while it was disabled: resend brings them, in order, then the clock's expiry follows.
            #expect(try await OperatorCommandTests.worker(db, ["endpoints", "enable", id]).status == 0)
            #expect(try await OperatorCommandTests.worker(db, ["endpoints", "resend", id, "--since", "1m"]).status == 0)
            #expect(receiver.handled().count < before + 3, "the clock has not ended it yet")
            try await clock.release()
            let all = try await waitFor(before + 3)
            #expect(all.suffix(3).filter { $0.hasPrefix("entitlement.") } == ["entitlement.granted", "entitlement.expired"], "\(all)")
            #expect(all.suffix(3).contains("transaction.succeeded"), "\(all)")
        }
    }
}

/// `examples/receiver/receiver.py` as a process, with the endpoint's secret.
final class ExampleReceiver: Sendable {
    let port: Int
    let log: URL
    private let process: Process

    init(python: String, secret: String, port: Int? = nil) async throws {
        self.port = try port ?? ServiceProcess.freePort()
        log = FileManager.default.temporaryDirectory.appendingPathComponent("receiver-\(UUID().uuidString).ndjson")
        process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [
            ReceiverExampleTests.repository.appendingPathComponent("examples/receiver/receiver.py").path, "--port", "\(self.port)",
            "--log", log.path,
        ]
        process.environment = ["SLUICE_ENDPOINT_SECRET": secret, "PATH": "/usr/bin:/bin"]
        try process.run()
        for _ in 0..<100 {
            // Its own answer (Python's http.server has no GET here: 501), not another listener's
            // that took the port meanwhile, in which case the receiver exits.
            let answer = try? await RawHTTPConnection.exchange(port: self.port, Array("GET / HTTP/1.1\r\nHost: t\r\n\r\n".utf8))
            guard process.isRunning else { throw PortTaken() }
            if answer?.headers.contains(where: { $0.key.lowercased() == "server" && $0.value.contains("Python") }) == true { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        stop()
        throw CommandFailure("the example receiver did not start")
    }

    /// The receiver exited at start: another process took its port after it was found free.
    struct PortTaken: Error {}

    /// A receiver on a port found free, trying another when one is taken meanwhile (tests run in parallel).
    static func onAFreePort(python: String, secret: String) async throws -> ExampleReceiver {
        for _ in 0..<4 {
            do { return try await ExampleReceiver(python: python, secret: secret) } catch is PortTaken { continue }
        }
        return try await ExampleReceiver(python: python, secret: secret)
    }

    /// The types of the events it handled (verified, once per id), in order.
    func handled() -> [String] {
        ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
            .compactMap { $0["type"] as? String }
    }

    func stop() {
        // SIGKILL: the test process's threads block SIGTERM, and the child inherits that mask.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: log)
    }
}
