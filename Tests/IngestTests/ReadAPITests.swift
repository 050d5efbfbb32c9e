// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import Shared
import Testing
import TestSupport
import NIOFoundationCompat
import PostgresNIO

/// The read API's answers to bad and empty queries (what it shows for real events is covered by
/// the transition tests in WorkerTests).
@Suite(.timeLimit(.minutes(3)))
struct ReadAPITests {
    static let key: HTTPFields = [.authorization: "Bearer \(IngestHarness.apiKey)"]

    @Test(arguments: [nil, "Bearer wrong", "Basic abc"])
    func aMissingOrUnknownKeyIs401(authorization: String?) async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            var headers: HTTPFields = [:]
            if let authorization { headers[.authorization] = authorization }
            for uri in ["/v1/iap/entitlements?user_id=u", "/v1/iap/transaction-history?user_id=u"] {
                let response = try await client.execute(uri: uri, method: .get, headers: headers)
                #expect(response.status == .unauthorized)
                #expect(response.errorCode == "unauthorized")
            }
        }
    }

    @Test func withoutKeysConfiguredEverythingIs401() async throws {
        try await IngestHarness.withIngest(environment: ["API_KEYS": ""]) { client, _ async throws in
            #expect(try await client.execute(uri: "/v1/iap/entitlements?user_id=u", method: .get, headers: Self.key).status == .unauthorized)
        }
    }

    @Test func neitherUserNorEmailIs400() async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            for uri in ["/v1/iap/entitlements", "/v1/iap/entitlements?user_id=", "/v1/iap/transaction-history"] {
                let response = try await client.execute(uri: uri, method: .get, headers: Self.key)
                #expect(response.status == .badRequest, "\(uri)")
                #expect(response.errorCode == "missing_parameter")
            }
        }
    }

    @Test(arguments: ["0", "101", "-1", "ten", "1.5"])
    func aLimitOutOfRangeIs400(limit: String) async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            let response = try await client.execute(uri: "/v1/iap/transaction-history?user_id=u&limit=\(limit)", method: .get, headers: Self.key)
            #expect(response.status == .badRequest)
            #expect(response.errorCode == "invalid_limit")
        }
    }

    @Test func anUnknownUserIsAnEmptyList() async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            let entitlements = try await client.execute(uri: "/v1/iap/entitlements?user_id=nobody", method: .get, headers: Self.key)
            #expect(entitlements.status == .ok)
            #expect(entitlements.text == #"{"entitlements":[]}"#)
            let byEmail = try await client.execute(uri: "/v1/iap/entitlements?email=nobody%40example.com", method: .get, headers: Self.key)
            #expect(byEmail.text == #"{"entitlements":[]}"#)
            let history = try await client.execute(uri: "/v1/iap/transaction-history?user_id=nobody&limit=100", method: .get, headers: Self.key)
            #expect(history.status == .ok)
            #expect(history.text == #"{"transactions":[]}"#)
        }
    }

    @Test func historyIsNewestFirstAndHonoursTheLimit() async throws {
        try await IngestHarness.withIngest { client, db async throws in
            for day in 1...5 {
                try await db.client.query(
                    """
                    INSERT INTO transactions (source, provider_transaction_id, user_id, status, amount, currency, purchased_at)
                    VALUES ('web_checkout', \("pi_\(day)"), 'u1', 'succeeded', 100, 'USD', \(Date(timeIntervalSince1970: Double(day) * 86_400)))
                    """, logger: TestDatabase.logger)
            }
            let response = try await client.execute(uri: "/v1/iap/transaction-history?user_id=u1&limit=3", method: .get, headers: Self.key)
            let object = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
            let ids = (object?["transactions"] as? [[String: Any]])?.map { $0["provider_transaction_id"] as? String }
            #expect(ids == ["pi_5", "pi_4", "pi_3"])
            let first = (object?["transactions"] as? [[String: Any]])?.first
            #expect(first?["purchased_at"] as? String == "1970-01-06T00:00:00Z")
            #expect(first?["refunded_at"] is NSNull)
            #expect(first?["product_id"] is NSNull)
        }
    }
}
