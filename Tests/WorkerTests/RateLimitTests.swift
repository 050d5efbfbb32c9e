// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Testing
import TestSupport

/// `RATE_LIMIT_PER_KEY` and `RATE_LIMIT_PER_ADDRESS` on the real routes: `429` with `Retry-After`.
@Suite(.timeLimit(.minutes(3)))
struct RateLimitTests {
    static func sync(_ system: SystemHarness, from address: String, key: String, id: String) async throws -> TestResponse {
        let body = try JSONEncoder().encode(["signed_transaction": try system.signer.sign(subscription(id, user: nil)), "user_id": "u\(id)"])
        return try await system.client.execute(
            uri: "/v1/iap/storekit-transactions", method: .post,
            headers: [HTTPField.Name("X-Sluice-Key")!: key, HTTPField.Name("X-Forwarded-For")!: "203.0.113.9, \(address)"],
            body: ByteBuffer(data: body))
    }

    @Test func anAppInstallIsLimitedByItsAddressAndTheBackendByItsKey() async throws {
        let limits = ["RATE_LIMIT_PER_ADDRESS": "1", "RATE_LIMIT_PER_KEY": "15", "TRUST_FORWARDED_FOR": "true"]
        try await SystemHarness.run(ingest: limits) { system in
            // A client key: bursts of 20 per address, then 429.
            for index in 0..<20 {
                #expect(try await Self.sync(system, from: "198.51.100.7", key: TestCredentials.clientAPIKey, id: "50\(index)").status == .accepted)
            }
            let refused = try await Self.sync(system, from: "198.51.100.7", key: TestCredentials.clientAPIKey, id: "5099")
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter] == "1")
            #expect(String(buffer: refused.body).contains("rate_limited"))
            // Another install is not held back (the client key's own limit is 30 a burst).
            #expect(try await Self.sync(system, from: "198.51.100.8", key: TestCredentials.clientAPIKey, id: "5100").status == .accepted)

            // A server key, from one address: only its key's limit (bursts of 30).
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<31 {
                statuses.append(try await system.client.execute(
                    uri: "/v1/iap/entitlements?user_id=u1", method: .get, headers: [.authorization: "Bearer \(TestCredentials.apiKey)"]).status)
            }
            #expect(statuses.dropLast() == Array(repeating: .ok, count: 30)[...])
            #expect(statuses.last == .tooManyRequests)
            // Nothing refused was stored.
            #expect(try await system.db.scalar("SELECT count(*) FROM events") == 21)
        }
    }
}
