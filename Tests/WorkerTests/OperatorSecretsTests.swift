// SPDX-License-Identifier: Apache-2.0
import Crypto
import DevSupport
import Foundation
import Shared
import Testing
import TestSupport

@testable import Worker
import PostgresNIO

/// Secrets never reach operator output, and forward signing keys are strong and rotatable.
@Suite(.timeLimit(.minutes(3)))
struct OperatorSecretsTests {
    /// A target's token may be in its user part, its query or (Slack-style) its path: operators see host only.
    @Test func deadDeliveriesShowTheirTargetWithoutCredentialsOrQuery() async throws {
        try await TestDatabase.with { db in
            try await db.client.query(
                """
                INSERT INTO deliveries (event_id, source, type, external_id, target, payload, state, attempts, last_error, finished_at)
                VALUES (1, 'apple', 'DID_RENEW', 'uuid-1', 'https://forwarder:hunter2-password@hooks.example.com/services/T0/path-token?token=sekret-token',
                        '\\x7b7d', 'dead', 12, 'HTTP 500', now())
                """, logger: TestDatabase.logger)
            let id = try await db.scalar("SELECT id FROM deliveries")
            for arguments in [["dlq", "show", "deliveries/\(id)", "--json"], ["dlq", "show", "deliveries/\(id)"], ["dlq", "list", "--queue", "deliveries", "--json"]] {
                let result = try await OperatorCommandTests.worker(db, arguments)
                #expect(result.status == 0, "\(result.stderr)")
                #expect(!["hunter2", "sekret", "path-token"].contains { result.stdout.contains($0) }, "\(arguments): \(result.stdout)")
            }
            #expect(try await OperatorCommandTests.worker(db, ["dlq", "show", "deliveries/\(id)"]).stdout.contains("https://hooks.example.com/…"))
            let drained = FileManager.default.temporaryDirectory.appendingPathComponent("drain-\(UUID().uuidString).ndjson")
            defer { try? FileManager.default.removeItem(at: drained) }
            #expect(try await OperatorCommandTests.worker(db, ["dlq", "drain", "--queue", "deliveries", "--output", drained.path]).status == 0)
            let archive = try String(contentsOf: drained, encoding: .utf8)
            #expect(archive.contains("hooks.example.com") && !["hunter2", "sekret", "path-token"].contains { archive.contains($0) })
        }
    }

    @Test func aShortForwardKeyIsRefused() throws {
        let short = "whsec_" + Data(repeating: 7, count: 16).base64EncodedString()
        let error = #expect(throws: ConfigurationError.self) { try StandardWebhookSigner(secret: short) }
        #expect(error?.variable == "FORWARD_SECRET")
        #expect(error?.description.contains(short) == false)
    }

    @Test func duringARotationEachKeySignsAndEitherVerifies() throws {
        let old = "whsec_" + Data(repeating: 1, count: 32).base64EncodedString()
        let new = "whsec_" + Data(repeating: 2, count: 32).base64EncodedString()
        let signer = try StandardWebhookSigner(secret: "\(new), \(old)")
        let body = Array(#"{"signedPayload":"x"}"#.utf8)
        let header = signer.signature(id: "msg_1", timestamp: 1_767_225_600, body: body)
        #expect(header.split(separator: " ").count == 2)
        for secret in [old, new] {
            #expect(StandardWebhooksReceiver.verifies(id: "msg_1", timestamp: 1_767_225_600, body: body, signatureHeader: header, secret: secret))
        }
        let stranger = "whsec_" + Data(repeating: 3, count: 32).base64EncodedString()
        #expect(!StandardWebhooksReceiver.verifies(id: "msg_1", timestamp: 1_767_225_600, body: body, signatureHeader: header, secret: stranger))
    }

    @Test(arguments: [("http://hooks.example.com/x", true), ("https://hooks.example.com/x", false), ("http://127.0.0.1:8081/x", false), ("http://localhost/x", false)])
    func plainHTTPToAnotherHostIsFlagged(url: String, flagged: Bool) throws {
        #expect(try ForwardTarget(url).isUnencryptedRemote == flagged)
    }
}
