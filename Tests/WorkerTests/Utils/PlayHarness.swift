// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import DevSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// Google (its OIDC keys, its OAuth token endpoint, the Play Developer API, all local stand-ins)
/// and Sluice (ingest, the worker's handlers, the read API) wired to it.
struct PlayHarness: Sendable {
    static let audience = "https://sluice.example.com/v1/webhooks/google-play"
    static let pushAccount = "play-push@sluice-test.iam.gserviceaccount.com"

    let harness: SystemHarness
    let google: GoogleOIDCStandIn
    let api: GooglePlayAPIStandIn
    /// The Play variables both processes were given.
    let environment: [String: String]

    /// - Parameter worker: more worker variables (TRANSFER_BEHAVIOR, …).
    static func run(worker: [String: String] = [:], _ body: @Sendable @escaping (PlayHarness) async throws -> Void) async throws {
        let google = try GoogleOIDCStandIn()
        let api = try GooglePlayAPIStandIn()
        let router = Router(context: BasicRequestContext.self)
        google.addRoutes(to: router)
        api.addRoutes(to: router)
        try await LocalHTTPServer.run(router) { base in
            let play = [
                "GOOGLE_PLAY_SERVICE_ACCOUNT_FILE": try api.writeKeyFile(base: base), "GOOGLE_PLAY_API_BASE_URL": base,
                "GOOGLE_PLAY_PACKAGE_NAMES": SamplePlayNotifications.packageName,
            ]
            let ingest = play.merging([
                "GOOGLE_PUSH_AUDIENCE": audience, "GOOGLE_PUSH_SERVICE_ACCOUNT": pushAccount,
                "GOOGLE_OIDC_CERTS_URL": base + GoogleOIDCStandIn.certsPath,
            ]) { $1 }
            try await SystemHarness.run(worker: play.merging(worker) { $1 }, ingest: ingest) { harness in
                try await body(PlayHarness(harness: harness, google: google, api: api, environment: play))
            }
        }
    }

    /// Pushes `notification` as Pub/Sub does, and expects it taken.
    func push(_ notification: [String: any Sendable], messageID: String = UUID().uuidString, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let response = try await harness.client.execute(
            uri: "/v1/webhooks/google-play", method: .post,
            headers: [.contentType: "application/json", .authorization: "Bearer " + (try google.idToken(audience: Self.audience, email: Self.pushAccount))],
            body: ByteBuffer(data: try SamplePlayNotifications.push(notification, messageID: messageID)))
        #expect(response.status == .ok, sourceLocation: sourceLocation)
    }

    /// Posts an app's sync of a Play purchase with the client key.
    func sync(_ body: [String: any Sendable]) async throws -> TestResponse {
        try await harness.client.execute(
            uri: "/v1/iap/play-purchases", method: .post,
            headers: [.contentType: "application/json", .authorization: "Bearer \(TestCredentials.clientAPIKey)"],
            body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: body)))
    }

    /// The `error.code` of a JSON error answer.
    static func errorCode(_ response: TestResponse) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any],
              let error = object["error"] as? [String: Any] else { return nil }
        return error["code"] as? String
    }

    func entitlement(_ key: String) async throws -> (status: String, product: String, user: String?, expires: Date?)? {
        for try await row in try await harness.db.client.query(
            "SELECT status, product_id, user_id, expires_at FROM entitlements WHERE entity_key = \(key)", logger: TestDatabase.logger
        ).decode((String, String, String?, Date?).self) {
            return row
        }
        return nil
    }

    func text(_ query: PostgresQuery) async throws -> String? {
        for try await value in try await harness.db.client.query(query, logger: TestDatabase.logger).decode(String.self) { return value }
        return nil
    }

    /// The worker's Play Developer API client.
    func playAPI(onError: @escaping @Sendable (Int) -> Void = { _ in }) throws -> PlayDeveloperAPI {
        let settings = try #require(try GooglePlayAPISettings.configured(by: EnvironmentValues(environment)))
        return settings.api(
            call: ProviderCall(http: .shared, provider: "Google Play Developer", maximumAttempts: 1, onError: onError), logger: TestDatabase.logger)
    }

    /// The acknowledger, under the test's lease.
    func acknowledger(onError: @escaping @Sendable (Int) -> Void = { _ in }) throws -> PlayAcknowledger {
        PlayAcknowledger(
            client: harness.db.client, api: try playAPI(onError: onError),
            lease: MaintenanceLease(client: harness.db.client, task: "play-acknowledge", owner: "test", logger: TestDatabase.logger),
            interval: .seconds(1), logger: TestDatabase.logger)
    }

    /// One pass of the acknowledger.
    func acknowledge() async throws {
        _ = try await acknowledger().runOnce()
    }
}
