// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import NIOCore
import Testing
import TestSupport
import HTTPTypes
import HummingbirdTesting
import NIOFoundationCompat
import PostgresNIO

/// `RESCIND_CONSENT` and any notification about the app rather than a purchase: `appData` instead
/// of `data`, verified from it (and its signed app transaction), stored, recorded and forwarded.
@Suite(.timeLimit(.minutes(3)))
struct AppDataNotificationTests {
    @Test func rescindConsentIsStoredRecordedAndForwarded() async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run(worker: ["FORWARD_TARGETS": sink.url]) { system in
                let uuid = UUID().uuidString.lowercased()
                let body = try system.signer.rescindConsentBody(uuid: uuid, bundleId: TestCredentials.bundleID, appAppleId: TestCredentials.appAppleID)
                let response = try await system.client.execute(
                    uri: "/v1/webhooks/appstore-notifications?sandbox=true", method: .post, headers: [.contentType: "application/json"],
                    body: ByteBuffer(data: body))
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                try await system.drain()
                try await system.forward()
                #expect(try await system.outcomes() == ["recorded"])
                #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE type = 'RESCIND_CONSENT' AND environment = 'Sandbox'") == 1)
                #expect(sink.received.count == 1)
                #expect(sink.received.first?.header("webhook-id") == uuid)
                #expect(sink.received.first?.body == Array(body))
            }
        }
    }

    @Test(arguments: [("com.someone.else", "Sandbox", "wrong_bundle"), (TestCredentials.bundleID, "Production", "wrong_environment")])
    func appDataIsCheckedLikeData(bundleID: String, environment: String, code: String) async throws {
        try await SystemHarness.run { system in
            let body = try system.signer.rescindConsentBody(bundleId: bundleID, environment: environment, appAppleId: TestCredentials.appAppleID)
            let response = try await system.client.execute(
                uri: "/v1/webhooks/appstore-notifications?sandbox=true", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(data: body))
            #expect(response.status == .unauthorized)
            #expect(String(buffer: response.body).contains(code))
        }
    }
}
