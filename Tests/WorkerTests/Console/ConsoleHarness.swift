// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Shared
import Testing
import TestSupport

@testable import Worker

/// The console's application on a ``SystemHarness``'s database, driven as a browser would: it
/// signs in, keeps the cookie, and posts forms with the CSRF token of the page they are on.
struct ConsoleHarness: Sendable {
    static let key = "console_test_operator_key_0123456789abcdef"
    static let otherKey = "console_test_second_key_abcdef0123456789"

    let client: any TestClientProtocol
    var cookie: String?

    static func run(
        _ system: SystemHarness, readOnly: Bool = false, keys: [String] = [key], reconciler: Reconciler? = nil,
        templates: [ConsoleTemplate] = ConsoleTemplate.allCases, _ body: @Sendable @escaping (ConsoleHarness) async throws -> Void
    ) async throws {
        let services = ConsoleServices(
            client: system.db.client, logger: TestDatabase.logger, leeway: 3_600, sandboxAccess: .anybody, eventProof: nil,
            rebuilder: EntityRebuilder(
                client: system.db.client,
                handlers: EventHandlers.all(logger: TestDatabase.logger, stripeAccounts: [], transferBehavior: .transfer, leeway: 3_600)
                    .compactMapValues { $0 as? any EventApplier },
                proof: nil, logger: TestDatabase.logger),
            reconciler: reconciler)
        let router = try ConsoleApplication.router(services: services, keys: try OperatorKeys(keys), readOnly: readOnly, templates: templates)
        try await Application(router: router).test(.router) { client in
            try await body(ConsoleHarness(client: client, cookie: nil))
        }
    }

    /// Signs in with `key`; returns the harness holding the session cookie.
    func signedIn(_ key: String = Self.key, sourceLocation: SourceLocation = #_sourceLocation) async throws -> ConsoleHarness {
        let response = try await post("/login", ["key": key])
        #expect(response.status == .seeOther, sourceLocation: sourceLocation)
        let setCookie = response.headers[.setCookie] ?? ""
        var signed = self
        signed.cookie = setCookie.split(separator: ";").first.map(String.init)
        #expect(signed.cookie?.hasPrefix("__Host-sluice_console=") == true, "\(setCookie)", sourceLocation: sourceLocation)
        return signed
    }

    func get(_ path: String) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let cookie { headers[.cookie] = cookie }
        return try await client.execute(uri: path, method: .get, headers: headers)
    }

    /// The page's text; fails the test unless it answered 200.
    func page(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let response = try await get(path)
        #expect(response.status == .ok, "\(path): \(response.status)", sourceLocation: sourceLocation)
        return String(buffer: response.body)
    }

    func post(_ path: String, _ fields: [String: String], headers extra: HTTPFields = [:]) async throws -> TestResponse {
        var headers = extra
        headers[.contentType] = "application/x-www-form-urlencoded"
        if let cookie { headers[.cookie] = cookie }
        let body = FormFields.encode(fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        return try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    /// Posts a form found on `page` with its CSRF token.
    func submit(_ path: String, from page: String, _ fields: [String: String] = [:]) async throws -> TestResponse {
        try await post(path, fields.merging(["csrf": Self.csrf(in: page) ?? ""]) { $1 })
    }

    static func csrf(in page: String) -> String? {
        guard let range = page.range(of: #"name="csrf" value="([^"]+)""#, options: .regularExpression) else { return nil }
        return page[range].split(separator: "\"").dropFirst(3).first.map(String.init)
    }
}
