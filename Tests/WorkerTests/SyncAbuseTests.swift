// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Shared
import Testing
import TestSupport

/// What a client key (pulled out of the app) can make the StoreKit sync store.
@Suite(.timeLimit(.minutes(3)))
struct SyncAbuseTests {
    /// One real signed transaction re-posted under endless user ids: the first few users are
    /// stored, the rest refused before anything is stored; a user already seen still syncs.
    @Test func onePurchaseIsSyncedForAFewUsersAtMost() async throws {
        try await SystemHarness.run(ingest: ["SYNC_MAX_USERS_PER_TRANSACTION": "3"]) { system in
            var purchase = subscription("9001", user: nil)
            for user in ["u1", "u2", "u3"] {
                #expect(try await system.postSync(purchase, userID: user).status == .accepted, "\(user)")
            }
            for user in ["u4", "U1", "u5"] {
                let refused = try await system.postSync(purchase, userID: user)
                #expect(refused.status == .conflict, "\(user)")
                #expect(String(buffer: refused.body).contains("too_many_users"))
            }
            // Apple re-signs the transaction (a refund): a user seen before syncs it again.
            purchase.signedDate = Date().addingTimeInterval(5).millisecondsSince1970
            #expect(try await system.postSync(purchase, userID: "u2").status == .accepted)
            // Another purchase has its own count.
            #expect(try await system.postSync(subscription("9002", user: nil), userID: "u4").status == .accepted)
            #expect(try await system.db.scalar("SELECT count(*) FROM events") == 5)
        }
    }
}
