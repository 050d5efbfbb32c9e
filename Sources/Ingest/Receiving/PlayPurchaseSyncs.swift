// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOFoundationCompat
import Shared

/// A Google Play purchase an app sends after the purchase on the device (`POST
/// /v1/iap/play-purchases`): the token is not signed, so it is verified by asking the Play
/// Developer API for the purchase, which must be of the app's package and the named product, and,
/// when the app set `obfuscatedExternalAccountId`, of `user_id`. Google's answer is stored raw as a
/// `play_purchase` row for the user, applied by the worker like any Play state, and acknowledged.
struct PlayPurchaseSyncs: Sendable {
    /// The body.
    struct Request: Decodable {
        var purchase_token: String
        var product_id: String
        var user_id: String
        /// Needed only when `GOOGLE_PLAY_PACKAGE_NAMES` names more than one app.
        var package_name: String?
        /// `subscription` or `product`; without it a subscription is tried first.
        var type: PlayProductKind?
    }

    let receiver: EventReceiver
    let api: PlayDeveloperAPI
    let packageNames: Set<String>
    /// At most `SYNC_MAX_USERS_PER_TRANSACTION` users per purchase (keyed `play:<token>`).
    let syncUsers: StoreKitSyncUsers
    let database: DatabaseCalls

    /// - Returns: whether the state was stored now (`false`: the same state for the same user was before).
    func sync(body: ByteBuffer, logger: Logger) async throws -> Bool {
        let request: Request
        do {
            request = try JSONDecoder().decode(Request.self, from: body)
        } catch {
            throw Rejection(.malformed, #"the body must be JSON {"purchase_token", "product_id", "user_id"[, "package_name", "type"]}"#)
        }
        try check(request)
        let packageName = try package(of: request)
        let (kind, answer) = try await fetch(request, packageName: packageName, logger: logger)
        let record = try await receiver.verify(source: .playPurchase, logger: logger) { () throws(Rejection) in
            try Self.check(answer, kind: kind, of: request)
            return PlayPurchaseRecord(
                cause: PlayNotificationType.syncEventType, fetchedAt: Date(), kind: kind, packageName: packageName, productID: request.product_id,
                purchaseToken: request.purchase_token, userID: request.user_id, purchase: answer
            ).record(externalID: Self.syncKey(request, answer: answer))
        }
        let (syncUsers, token, user) = (syncUsers, "play:" + request.purchase_token, request.user_id)
        let admitted = try await database.run { try await syncUsers.admit(originalTransactionID: token, userID: user) }
        try await receiver.verify(source: .playPurchase, logger: logger) { () throws(Rejection) in
            guard admitted else {
                throw Rejection(.tooManyUsers, "this purchase was synced for \(syncUsers.limit) other users already (SYNC_MAX_USERS_PER_TRANSACTION)")
            }
        }
        return try await receiver.store(record, logger: logger) == .stored
    }

    private func check(_ request: Request) throws(Rejection) {
        if let problem = UserIDRule.problem(with: request.user_id) { throw Rejection(.malformed, problem) }
        for (name, value) in [("purchase_token", request.purchase_token), ("product_id", request.product_id)] {
            guard !value.isEmpty, value.utf8.count <= 1_024, value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
                throw Rejection(.malformed, "\(name) must be 1–1024 printable ASCII characters")
            }
        }
    }

    private func package(of request: Request) throws(Rejection) -> String {
        if let name = request.package_name {
            guard packageNames.contains(name) else { throw Rejection(.wrongPackage, "package_name is not in GOOGLE_PLAY_PACKAGE_NAMES") }
            return name
        }
        guard packageNames.count == 1, let only = packageNames.first else {
            throw Rejection(.malformed, "package_name is required: GOOGLE_PLAY_PACKAGE_NAMES names more than one app")
        }
        return only
    }

    /// Google's answer for the token: a subscription's, else (or when `type` says so) a product's.
    /// Google answers a product's token asked as a subscription with `400`, and a token it does not
    /// know with `404` or `400`; its own failures, and a refused service account, are `502`.
    private func fetch(_ request: Request, packageName: String, logger: Logger) async throws -> (PlayProductKind, ByteBuffer) {
        func refused(_ error: ProviderAPIError) -> Bool { error.provider == PlayDeveloperAPI.provider && error.status == 400 }
        do {
            if request.type != .product {
                do {
                    if let answer = try await api.subscription(packageName: packageName, token: request.purchase_token) { return (.subscription, answer) }
                } catch let error as ProviderAPIError where refused(error) && request.type == nil {
                    // Not a subscription's token: a product's, perhaps.
                }
            }
            if request.type != .subscription,
               let answer = try await api.product(packageName: packageName, productID: request.product_id, token: request.purchase_token) {
                return (.product, answer)
            }
        } catch let error as ProviderAPIError where refused(error) {
            logger.info("Google refused the synced purchase", metadata: ["reason": "\(error.message)"])
        } catch let error as ProviderAPIError {
            logger.warning("the Play Developer API could not be asked", metadata: ["error": "\(error)"])
            throw APIError(.badGateway, code: "play_unavailable", message: "the Play Developer API did not answer; retry later")
        }
        throw APIError(.notFound, code: "purchase_not_found", message: "Google Play knows no such purchase of this product")
    }

    /// The purchase must be the product named and, when the app set it, the user's.
    static func check(_ answer: ByteBuffer, kind: PlayProductKind, of request: Request) throws(Rejection) {
        let products: [String]
        let account: String?
        switch kind {
        case .subscription:
            guard let purchase = try? JSONDecoder().decode(PlaySubscriptionPurchase.self, from: answer) else {
                throw Rejection(.malformed, "Google's answer is not a SubscriptionPurchaseV2")
            }
            products = (purchase.lineItems ?? []).compactMap(\.productId)
            account = purchase.externalAccountIdentifiers?.obfuscatedExternalAccountId
        case .product:
            guard let purchase = try? JSONDecoder().decode(PlayProductPurchase.self, from: answer) else {
                throw Rejection(.malformed, "Google's answer is not a ProductPurchase")
            }
            products = [purchase.productId ?? request.product_id]
            account = purchase.obfuscatedExternalAccountId
        }
        guard products.contains(request.product_id) else {
            throw Rejection(.productMismatch, "the purchase is not of product_id")
        }
        if let account, !account.isEmpty, account != request.user_id {
            throw Rejection(.userMismatch, "user_id is not the obfuscatedExternalAccountId the purchase was made with")
        }
    }

    /// One row per token, user and state: the same sync twice is one row, a changed state a new one.
    static func syncKey(_ request: Request, answer: ByteBuffer) -> String {
        var bytes = Array(request.purchase_token.utf8) + [0] + Array(request.user_id.utf8) + [0]
        bytes += answer.readableBytesView
        return "sync:" + SHA256Hex.digest(of: bytes)
    }
}
