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

    /// Limits so slow to refill (one request per 1,000 s) that no test run refills a bucket.
    static let slow = 0.001

    @Test func anAppInstallIsLimitedByItsAddress() async throws {
        try await SystemHarness.run(ingest: ["RATE_LIMIT_PER_ADDRESS": "\(Self.slow)", "RATE_LIMIT_PER_KEY": "0", "TRUST_FORWARDED_FOR": "true"]) { system in
            // A client key: a burst of 20 per address, then 429.
            for index in 0..<20 {
                #expect(try await Self.sync(system, from: "198.51.100.7", key: TestCredentials.clientAPIKey, id: "50\(index)").status == .accepted)
            }
            let refused = try await Self.sync(system, from: "198.51.100.7", key: TestCredentials.clientAPIKey, id: "5099")
            #expect(refused.status == .tooManyRequests)
            // A whole token takes 1,000 s; less by what refilled while the burst was sent (a loaded
            // machine takes seconds: a fresh-clone CI run took 12 s for the 20 syncs, Retry-After 988).
            let retryAfter = try #require(refused.headers[.retryAfter].flatMap { Int($0) })
            #expect((940...1000).contains(retryAfter), "Retry-After: \(retryAfter)")
            #expect(String(buffer: refused.body).contains("rate_limited"))
            // Another install is not held back; the address the client wrote first in the header is not the one counted.
            #expect(try await Self.sync(system, from: "198.51.100.8", key: TestCredentials.clientAPIKey, id: "5100").status == .accepted)
            // A server key from the same address is not limited by address.
            #expect(try await Self.sync(system, from: "198.51.100.7", key: TestCredentials.apiKey, id: "5101").status == .accepted)
            // Nothing refused was stored.
            #expect(try await system.db.scalar("SELECT count(*) FROM events") == 22)
        }
    }

    @Test func everyKeyIsLimitedWhateverItsAddress() async throws {
        try await SystemHarness.run(ingest: ["RATE_LIMIT_PER_KEY": "\(Self.slow)", "RATE_LIMIT_PER_ADDRESS": "0"]) { system in
            var statuses: [HTTPResponse.Status] = []
            for path in ["/v1/iap/entitlements?user_id=u1", "/v1/iap/transaction-history?user_id=u1", "/v1/iap/entitlements?user_id=u2"] {
                statuses.append(try await system.client.execute(
                    uri: path, method: .get, headers: [.authorization: "Bearer \(TestCredentials.apiKey)"]).status)
            }
            #expect(statuses == [.ok, .ok, .tooManyRequests])
            // Each key has its own bucket: the client key still syncs.
            #expect(try await Self.sync(system, from: "198.51.100.9", key: TestCredentials.clientAPIKey, id: "5200").status == .accepted)
        }
    }
}
