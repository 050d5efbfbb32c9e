// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import NIOCore
import Shared

/// One StoreKit transaction synced for a user, as `POST /v1/iap/storekit-transactions` and the
/// receipts endpoint store it: verified like a notification, held to the token and the
/// per-purchase user rules, then stored raw for the worker to apply.
struct StoreKitSyncs: Sendable {
    let receiver: EventReceiver
    let apple: AppleNotificationVerifier
    /// Whose each registered `appAccountToken` is: a sync naming a token's user is that user's.
    let tokens: AppAccountTokens
    /// At most `SYNC_MAX_USERS_PER_TRANSACTION` users per purchase.
    let syncUsers: StoreKitSyncUsers
    /// The sync's reads bounded by `DATABASE_TIMEOUT_SECONDS`.
    let database: DatabaseCalls

    /// Verifies and stores `body` (`{"signed_transaction": "<JWS>", "user_id": "…"}`).
    /// - Parameter viaReceipt: found through a StoreKit 1 receipt (``AppleNotificationVerifier/verifyStoreKitTransaction(body:viaReceipt:)``).
    /// - Returns: the transaction's id, and whether it was stored now (`false`: stored before).
    func sync(body: ByteBuffer, viaReceipt: Bool = false, logger: Logger) async throws -> (transactionID: String, stored: Bool) {
        let apple = self.apple
        let sync = try await receiver.verify(source: .storekit, logger: logger) { () async throws(Rejection) in
            try await apple.verifyStoreKitTransaction(body: body, viaReceipt: viaReceipt)
        }
        // A transaction bought with another token than `user_id` is that user's only if the app's
        // server registered the token to them.
        if let token = sync.tokenOfAnotherUser {
            var owner: String?
            if let registered = UUID(uuidString: token) {
                let tokens = self.tokens
                owner = try await database.run { try await tokens.owner(of: registered) }
            }
            try await receiver.verify(source: .storekit, logger: logger) { () throws(Rejection) in
                guard owner == sync.userID else {
                    throw Rejection(.userMismatch, "user_id is not the appAccountToken the transaction was bought with, nor its registered user")
                }
            }
        }
        let (record, transactionID) = (sync.record, sync.transactionID)
        let syncUsers = self.syncUsers
        let (originalTransactionID, userID) = (record.orderingKey ?? transactionID, sync.userID)
        let admitted = try await database.run { try await syncUsers.admit(originalTransactionID: originalTransactionID, userID: userID) }
        try await receiver.verify(source: .storekit, logger: logger) { () throws(Rejection) in
            guard admitted else {
                throw Rejection(.tooManyUsers, "this purchase was synced for \(syncUsers.limit) other users already (SYNC_MAX_USERS_PER_TRANSACTION)")
            }
        }
        return (transactionID, try await receiver.store(record, logger: logger) == .stored)
    }
}
