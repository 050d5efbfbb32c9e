// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import NIOCore
import Testing
import TestSupport
import HummingbirdTesting
import NIOFoundationCompat
import PostgresNIO
@testable import Worker

/// One person, one user (docs/getting-started.md): the app's server registers an
/// `appAccountToken` for its own (non-UUID) user id, and Apple purchases made with the token —
/// before and after the registration — are that user's, beside the user's Stripe purchases.
@Suite(.timeLimit(.minutes(3)))
struct AppAccountTokenTests {
    static let user = "acct_1042"

    /// `PUT /v1/iap/users/{user}/app-account-token` with `key`.
    static func register(_ system: SystemHarness, token: String, user: String = user, key: String = TestCredentials.apiKey) async throws -> TestResponse {
        try await system.client.execute(
            uri: "/v1/iap/users/\(user)/app-account-token", method: .put,
            headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(string: #"{"app_account_token":"\#(token)"}"#))
    }

    /// Applied one event per transaction, and in batches (whose tokens' users are read ahead).
    @Test(arguments: [1, 16])
    func applePurchasesBeforeAndAfterTheRegistrationAreTheUsersBesideItsStripeOnes(batchSize: Int) async throws {
        try await HTTPSink.with { sink in
            try await SystemHarness.run { system in
                let (_, secret) = try await OutgoingEventsTests.addEndpoint(system, url: sink.url)
                let token = UUID().uuidString.lowercased()
                // Bought on the web (Stripe names the app's own id) and on the phone (Apple names the token).
                try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_1042", user: Self.user, charge: "ch_1042"))
                try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("1042001", user: token.uppercased()))
                try await system.drain(batchSize: batchSize)
                #expect(try await system.entitlements(userID: Self.user).count == 1, "before: Apple's is the token's")
                #expect(try await system.entitlements(userID: token).count == 1)

                let registered = try await Self.register(system, token: token.uppercased())
                #expect(registered.status == .created, "\(String(buffer: registered.body))")
                #expect(String(buffer: registered.body) == #"{"app_account_token":"\#(token)","user_id":"\#(Self.user)"}"#)
                // Answered under the user at once, before the worker moved anything.
                let atOnce = try await system.entitlements(userID: Self.user)
                #expect(Set(atOnce.compactMap { $0["source"] as? String }) == ["web_checkout", "store_kit"])
                #expect(try await system.transactions(userID: Self.user).count == 2)

                try await system.drain(batchSize: batchSize)
                #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE user_id = \(token)") == 0)
                #expect(try await system.db.scalar("SELECT count(*) FROM transactions WHERE user_id = \(token)") == 0)
                #expect(try await system.entitlements(userID: token).isEmpty)
                #expect(try await system.transactions(userID: Self.user).count == 2)

                // After: a second purchase with the token, and the app's sync naming the user.
                try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("1042002", user: token, product: "pro.yearly"))
                let synced = try await system.postSync(subscription("1042003", user: token, product: "lifetime.tip"), userID: Self.user)
                #expect(synced.status == .accepted, "a sync naming the token's registered user is consistent")
                let other = try await system.postSync(subscription("1042003", user: token), userID: "acct_other")
                #expect(other.status == .conflict && String(buffer: other.body).contains("user_mismatch"))
                try await system.drain(batchSize: batchSize)
                let after = try await system.entitlements(userID: Self.user)
                #expect(after.count == 4)
                #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE user_id = \(Self.user)") == 4)

                try await system.forward()
                let events = try OutgoingEventsTests.events(sink, secret: secret)
                let transferred = events.filter { $0["type"] as? String == "entitlement.transferred" }
                #expect(transferred.count == 1, "the move is announced once")
                let data = transferred.first?["data"] as? [String: Any]
                #expect((data?["entitlement"] as? [String: Any])?["user_id"] as? String == Self.user)
                #expect((data?["previous"] as? [String: Any])?["user_id"] as? String == token)
                #expect((transferred.first?["cause"] as? [String: Any])?["origin"] as? String == "registration")
            }
        }
    }

    @Test func aTokenIsOneUsersAndBadRequestsChangeNothing() async throws {
        try await SystemHarness.run { system in
            let token = UUID().uuidString.lowercased()
            #expect(try await Self.register(system, token: token).status == .created)
            #expect(try await Self.register(system, token: token).status == .ok, "the same registration again")
            let second = UUID().uuidString
            #expect(try await Self.register(system, token: second).status == .created, "a user may have several tokens")
            let conflict = try await Self.register(system, token: token, user: "acct_someone_else")
            #expect(conflict.status == .conflict)
            #expect(String(buffer: conflict.body).contains("token_conflict"))
            #expect(!String(buffer: conflict.body).contains(Self.user), "another user's id is not told")
            #expect(try await Self.register(system, token: "not-a-uuid").status == .badRequest)
            #expect(try await Self.register(system, token: token, user: String(repeating: "u", count: 256)).status == .badRequest)
            #expect(try await Self.register(system, token: UUID().uuidString, key: TestCredentials.clientAPIKey).status == .forbidden)
            #expect(try await Self.register(system, token: UUID().uuidString, key: "wrong").status == .unauthorized)
            let get = try await system.client.execute(
                uri: "/v1/iap/users/\(Self.user)/app-account-token", method: .get, headers: [.authorization: "Bearer \(TestCredentials.apiKey)"])
            #expect(get.status == .methodNotAllowed)
            #expect(try await system.db.scalar("SELECT count(*) FROM app_account_tokens") == 2)
            #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE source = 'account'") == 2, "one event per registration")
        }
    }
}
