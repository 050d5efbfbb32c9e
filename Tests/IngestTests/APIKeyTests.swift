// SPDX-License-Identifier: Apache-2.0
import Crypto
import DevSupport
import Foundation
import HTTPTypes
import NIOCore
import Shared
import Testing
import TestSupport

@testable import Ingest
import HummingbirdTesting
import NIOFoundationCompat

/// Server keys read and sync; client keys, the ones shipped in apps, only sync. Weak or
/// placeholder keys are refused at start.
@Suite(.timeLimit(.minutes(3)))
struct APIKeyTests {
    @Test func aClientKeySyncsButCannotRead() async throws {
        try await IngestHarness.withIngest { client, _ async throws in
            let clientKey: HTTPFields = [.authorization: "Bearer \(TestCredentials.clientAPIKey)"]
            for uri in ["/v1/iap/entitlements?user_id=u", "/v1/iap/entitlements?email=a%40b.c", "/v1/iap/transaction-history?user_id=u"] {
                let response = try await client.execute(uri: uri, method: .get, headers: clientKey)
                #expect(response.status == .forbidden, "\(uri)")
                #expect(response.errorCode == "forbidden")
            }
            let transaction = SampleAppleTransaction(transactionId: "4242", bundleId: TestCredentials.bundleID)
            let body = try JSONEncoder().encode(["signed_transaction": try TestCredentials.signer.sign(transaction), "user_id": "u"])
            let sync = try await client.execute(
                uri: "/v1/iap/storekit-transactions", method: .post, headers: [HTTPField.Name("X-Sluice-Key")!: TestCredentials.clientAPIKey],
                body: ByteBuffer(data: body))
            #expect(sync.status == .accepted)
            let read = try await client.execute(
                uri: "/v1/iap/entitlements?user_id=u", method: .get, headers: [.authorization: "Bearer \(TestCredentials.apiKey)"])
            #expect(read.status == .ok)
        }
    }

    @Test func aKeyGivenAsItsDigestIsAccepted() throws {
        let key = "a-server-key-of-forty-characters-000000"
        let digest = SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
        let check = APIKeyCheck(server: try APIKeyDigests.parse(["sha256:\(digest.uppercased())"], variable: "API_KEYS"))
        #expect(check.role(of: key) == .server)
        #expect(check.role(of: key + "x") == nil)
    }

    @Test(arguments: ["short-key", "replace-with-a-long-random-key", "dev_api_key", "sha256:abc", "sha256:" + String(repeating: "g", count: 64)])
    func aWeakOrPlaceholderKeyIsRefusedAtStart(key: String) throws {
        for variable in ["API_KEYS", "CLIENT_API_KEYS"] {
            let error = #expect(throws: ConfigurationError.self) {
                try IngestSettings(environment: EnvironmentValues(["DATABASE_URL": "postgres://x@127.0.0.1:1/x", variable: key]))
            }
            #expect(error?.variable == variable)
            #expect(error?.description.contains(key) == false || key.hasPrefix("sha256"), "the key is not repeated")
        }
    }

    @Test func aServerKeyIsNotAClientKeyAndTheReverse() throws {
        let check = APIKeyCheck(
            server: try APIKeyDigests.parse([TestCredentials.apiKey], variable: "API_KEYS"),
            client: try APIKeyDigests.parse([TestCredentials.clientAPIKey], variable: "CLIENT_API_KEYS"))
        #expect(check.role(of: TestCredentials.apiKey) == .server)
        #expect(check.role(of: TestCredentials.clientAPIKey) == .client)
        #expect(check.role(of: "unknown-key-unknown-key-unknown-key") == nil)
    }
}
