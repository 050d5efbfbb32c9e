// SPDX-License-Identifier: Apache-2.0
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
        let port = try ServiceProcess.freePort()
        let secret = Endpoint.newSecret()
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("receiver-\(UUID().uuidString).ndjson")
        defer { try? FileManager.default.removeItem(at: log) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [Self.repository.appendingPathComponent("examples/receiver/receiver.py").path, "--port", "\(port)", "--log", log.path]
        process.environment = ["SLUICE_ENDPOINT_SECRET": secret, "PATH": "/usr/bin:/bin"]
        try process.run()
        defer {
            // SIGKILL: the test process's threads block SIGTERM, and the child inherits that mask.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        var up = false
        for _ in 0..<100 where !up {
            up = (try? await RawHTTPConnection.exchange(port: port, Array("GET / HTTP/1.1\r\nHost: t\r\n\r\n".utf8))) != nil
            if !up { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(up, "the receiver did not start")

        try await SystemHarness.run(worker: ["MAX_ATTEMPTS": "1"]) { system in
            let store = EndpointStore(client: system.db.client, logger: TestDatabase.logger)
            let url = "http://127.0.0.1:\(port)/sluice"
            let good = try await store.add(url: url, changes: .init(), secret: secret)
            let forged = try await store.add(url: url, changes: .init(eventTypes: ["entitlement.granted"]), secret: Endpoint.newSecret())
            try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_61", user: "u61", charge: "ch_61"))
            try await system.drain()
            try await system.stripe("charge.refunded", StripeObjects.charge("ch_61", paymentIntent: "pi_61"))
            try await system.drain()
            try await system.forward()
            #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'done' AND endpoint_id = \(good.id)") == 4)
            #expect(try await system.db.scalar(
                "SELECT count(*) FROM deliveries d JOIN queue_attempts a ON a.job_id = d.id AND a.queue = 'deliveries' WHERE d.endpoint_id = \(forged.id) AND a.http_status = 400") == 1)
        }
        let handled = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(handled.map { $0["type"] as? String } == ["entitlement.granted", "transaction.succeeded", "entitlement.refunded", "transaction.refunded"])
    }
}
