// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import Logging
import Shared
import TestSupport
import X509

@testable import Ingest
import NIOFoundationCompat
import PostgresNIO

/// Runs the real `ingest` application (router, group-commit writer, PostgreSQL client) against a
/// fresh migrated database, with settings built from an environment the way the process builds them.
enum IngestHarness {
    static let stripeSecret = TestCredentials.stripeSecret
    static let rotatedStripeSecret = TestCredentials.rotatedStripeSecret
    static let apiKey = TestCredentials.apiKey
    static let bundleID = TestCredentials.bundleID
    static let appAppleID = TestCredentials.appAppleID
    static var pki: ApplePKI { TestCredentials.pki }
    static var signer: AppleJWSSigner { TestCredentials.signer }

    static func environment(database: DatabaseURL, overrides: [String: String] = [:]) -> [String: String] {
        TestCredentials.ingestEnvironment(databaseURL: database.urlString, overrides: overrides)
    }

    /// Runs `body` with a client of the real application, in process (`.router`) or over a socket (`.live`).
    ///
    /// - Parameter storeTimeout: when a webhook is answered `503` for want of a commit. Longer
    ///   than the product's 5 s by default: `scripts/test` starts a hundred suites at once on two
    ///   cores, and a fresh database's first connections can then take that long, which is load,
    ///   not what these tests check. The tests of the timeout itself pass the product's value.
    static func withIngest(
        _ setup: TestingSetup = .router, environment overrides: [String: String] = [:],
        storeTimeout: Duration = .seconds(30),
        _ body: @Sendable @escaping (any TestClientProtocol, TestDatabase) async throws -> Void
    ) async throws {
        try await TestDatabase.with { db in
            var settings = try IngestSettings(environment: EnvironmentValues(environment(database: db.url, overrides: overrides)))
            settings.storeTimeout = storeTimeout
            let app = try buildApplication(settings: settings, logger: TestDatabase.logger)
            try await app.test(setup) { client in try await body(client, db) }
        }
    }
}

extension TestClientProtocol {
    /// POSTs a Stripe event signed with `secret` (or with the header given).
    func postStripe(_ body: Data, secret: String = IngestHarness.stripeSecret, signature: String? = nil) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        headers[HTTPField.Name("Stripe-Signature")!] = signature ?? StripeSigner.header(body: body, secret: secret)
        return try await execute(uri: "/v1/webhooks/stripe", method: .post, headers: headers, body: ByteBuffer(data: body))
    }

    func postApple(_ body: Data, sandbox: Bool = true, path: String = "/v1/webhooks/appstore-notifications") async throws -> TestResponse {
        try await execute(
            uri: path + (sandbox ? "?sandbox=true" : ""), method: .post, headers: [.contentType: "application/json"],
            body: ByteBuffer(data: body))
    }
}

extension TestResponse {
    /// The `error.code` of a JSON error body.
    var errorCode: String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any],
              let error = object["error"] as? [String: Any] else { return nil }
        return error["code"] as? String
    }

    var text: String { String(buffer: body) }
}

extension TestDatabase {
    func eventCount(source: String? = nil) async throws -> Int64 {
        if let source {
            return try await scalar("SELECT count(*) FROM events WHERE source = \(source)")
        }
        return try await scalar("SELECT count(*) FROM events")
    }
}
