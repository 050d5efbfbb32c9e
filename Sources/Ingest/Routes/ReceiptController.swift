// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import HTTPTypes
import Logging
import NIOCore
import NIOFoundationCompat
import Shared

/// StoreKit 1 receipts (docs/receipts.md), with a client or server key:
/// - `POST /v1/iap/receipts` `{"receipt": "<base64>", "user_id": "…"}`: one transaction id is read
///   from the receipt (an app receipt, or a legacy transaction receipt), the customer's whole
///   transaction history is asked of the App Store Server API (Production, then Sandbox when
///   Apple does not know the id there), and every signed transaction in it is verified and
///   stored for the user exactly as a StoreKit sync; `202` when any was new, `200` when all were
///   stored before.
/// - `POST /v1/iap/receipts/verify` `{"receipt": "<base64>"}`: what the receipt holds and what
///   Apple answers for it, verified, stored nowhere: each transaction as the read API shows one
///   (``TransactionBody``, `id` `null`), with Apple's ids and dates beside it.
/// Without App Store Server API credentials (or `APPLE_BUNDLE_IDS`) both answer `503`.
struct ReceiptController<Context: RemoteAddressRequestContext>: Sendable {
    /// `nil` without App Store Server API credentials or `APPLE_BUNDLE_IDS`.
    let history: ReceiptTransactionHistory?
    /// How a transaction is stored, as a sync; `nil` under the same condition.
    let syncs: StoreKitSyncs?
    let apiKeys: APIKeyCheck
    let receiver: EventReceiver

    static var storePath: RouterPath { "/v1/iap/receipts" }
    static var verifyPath: RouterPath { "/v1/iap/receipts/verify" }

    func addRoutes(to router: Router<Context>) {
        router.post(Self.storePath, use: store)
        router.post(Self.verifyPath, use: verify)
    }

    private struct Body: Decodable {
        var receipt: String
        var user_id: String?
    }

    /// A transaction as the verify answer shows it, from its verified JWS: the read API's shape
    /// (``TransactionBody``: `id` `null`, it is not stored), then Apple's `transaction_id`,
    /// `original_transaction_id`, `expires_at` and `app_account_token`.
    struct TransactionAnswer: Encodable {
        var body: TransactionBody
        var transactionID: String
        var originalTransactionID: String?
        var expiresAt: Date?
        var appAccountToken: String?

        var members: [JSONTextMember] {
            body.members + [
                JSONTextMember("transaction_id", transactionID), JSONTextMember("original_transaction_id", originalTransactionID),
                JSONTextMember("expires_at", expiresAt?.formatted(.iso8601)), JSONTextMember("app_account_token", appAccountToken),
            ]
        }

        func encode(to encoder: any Encoder) throws {
            try JSONTextMember.encode(members, to: encoder)
        }
    }

    @Sendable func store(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireAny(request, from: context.remoteAddress)
        let (history, syncs) = try configured(context)
        let body = try await Self.body(request, receiver: receiver)
        guard let user = body.user_id else { throw APIError(.badRequest, code: "malformed", message: "give user_id") }
        if let problem = UserIDRule.problem(with: user) { throw APIError(.badRequest, code: "malformed", message: problem) }
        let read = try Self.read(body.receipt, bundleIDs: history.bundleIDs)
        guard let transactionID = read.transactionID else {
            return try ReadController<Context>.json(StoreAnswer(environment: nil, transactions: []))
        }
        let (environment, signed) = try await history.all(of: transactionID, bundleID: read.bundleID, logger: context.logger)
        var stored: [StoreAnswer.Item] = []
        var anyNew = false
        for jws in signed {
            let sync = try JSONSerialization.data(withJSONObject: ["signed_transaction": jws, "user_id": user], options: [.sortedKeys])
            do {
                let (id, new) = try await syncs.sync(body: ByteBuffer(data: sync), viaReceipt: true, logger: context.logger)
                stored.append(.init(transaction_id: id, stored: new))
                anyNew = anyNew || new
            } catch let rejection as Rejection where rejection.reason.status == 409 {
                // Verified, but not this user's to store (a purchase bought with another account's
                // appAccountToken on a shared Apple ID; one synced for too many users): the
                // customer's other purchases are stored all the same, this one is named.
                let verifier = history.verifier
                let id = try? await verifier.verifyTransaction(jws).transactionId
                stored.append(.init(transaction_id: id, stored: false, refused: rejection.reason.code))
            }
        }
        context.logger.info("receipt stored", metadata: [
            "transactions": "\(stored.count)", "new": "\(stored.filter(\.stored).count)", "refused": "\(stored.filter { $0.refused != nil }.count)",
        ])
        var response = try ReadController<Context>.json(StoreAnswer(environment: environment?.rawValue, transactions: stored))
        response.status = anyNew ? .accepted : .ok
        return response
    }

    private struct StoreAnswer: Encodable {
        struct Item: Encodable {
            var transaction_id: String?
            /// `false`: stored before (the same sync again), or refused.
            var stored: Bool
            /// Why it was not stored for this user (`user_mismatch`, `too_many_users`); absent when it was.
            var refused: String? = nil
        }

        var environment: String?
        var transactions: [Item]
    }

    @Sendable func verify(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireAny(request, from: context.remoteAddress)
        let (history, _) = try configured(context)
        let body = try await Self.body(request, receiver: receiver)
        let read = try Self.read(body.receipt, bundleIDs: history.bundleIDs)
        var answer = VerifyAnswer(bundle_id: read.bundleID, receipt_type: read.receiptType, receipt_transaction_id: read.transactionID, transactions: [])
        if let transactionID = read.transactionID {
            let (environment, signed) = try await history.all(of: transactionID, bundleID: read.bundleID, logger: context.logger)
            answer.environment = environment?.rawValue
            for jws in signed {
                let verifier = history.verifier
                let transaction = try await receiver.verify(source: .storekit, logger: context.logger) { () async throws(Rejection) in
                    try await verifier.verifyTransaction(jws)
                }
                answer.transactions.append(Self.answer(transaction))
            }
        }
        return try ReadController<Context>.json(answer)
    }

    private struct VerifyAnswer: Encodable {
        var bundle_id: String?
        var receipt_type: String?
        var receipt_transaction_id: String?
        var environment: String?
        var transactions: [TransactionAnswer]
    }

    /// The ledger row the transaction would make, as the read API shows one, with Apple's ids.
    static func answer(_ transaction: AppleTransactionPayload) -> TransactionAnswer {
        let state = TransactionState(
            apple: transaction, productType: ProductType(appleType: transaction.type) ?? .nonConsumable,
            environment: PurchaseEnvironment(apple: transaction.environment) ?? .production)
        return TransactionAnswer(
            body: TransactionBody(unstored: state), transactionID: transaction.transactionId,
            originalTransactionID: transaction.originalTransactionId, expiresAt: transaction.expiresDate,
            appAccountToken: transaction.appAccountToken)
    }

    private func configured(_ context: Context) throws -> (ReceiptTransactionHistory, StoreKitSyncs) {
        guard let history, let syncs else {
            context.logger.error("receipt refused: the App Store Server API is not configured")
            throw APIError(
                .serviceUnavailable, code: "receipts_not_configured",
                message: "reading receipts needs the App Store Server API: set \(AppStoreAPISettings.variables), and APPLE_BUNDLE_IDS")
        }
        return (history, syncs)
    }

    private static func body(_ request: Request, receiver: EventReceiver) async throws -> Body {
        let buffer = try await receiver.readBody(request, source: .storekit)
        guard let body = try? JSONDecoder().decode(Body.self, from: buffer), !body.receipt.isEmpty else {
            throw APIError(.badRequest, code: "malformed", message: "the body must be JSON {\"receipt\": \"<base64>\", \"user_id\": \"…\"}")
        }
        return body
    }

    /// What the receipt names: an app receipt's first purchase, else a legacy transaction
    /// receipt's transaction. The bundle id the API is asked for: the receipt's (an app receipt's,
    /// a legacy receipt's `bid`), which must be a configured app; when it names none, the only
    /// configured one, or the first.
    static func read(_ text: String, bundleIDs: [String]) throws -> (transactionID: String?, bundleID: String, receiptType: String?) {
        let (transactionID, named, receiptType): (String?, String?, String?)
        do {
            let receipt = try AppReceipt(base64: text)
            (transactionID, named, receiptType) = (receipt.transactionID, receipt.bundleID, receipt.receiptType)
        } catch let problem as AppReceipt.Problem {
            guard let legacy = AppReceipt.legacyPurchase(transactionReceipt: text) else {
                throw APIError(.badRequest, code: "invalid_receipt", message: "not an app receipt (\(problem)) nor a transaction receipt")
            }
            (transactionID, named, receiptType) = (legacy.transactionID, legacy.bundleID, nil)
        }
        let bundle = named ?? bundleIDs[0]
        guard bundleIDs.contains(bundle) else {
            throw APIError(.badRequest, code: "wrong_bundle", message: "the receipt is for \(bundle.prefix(100)), not one of APPLE_BUNDLE_IDS")
        }
        return (transactionID, bundle, receiptType)
    }
}

/// Get Transaction History through the App Store Server API, for the configured apps.
struct ReceiptTransactionHistory: Sendable {
    let api: AppStoreServerAPI
    let bundleIDs: [String]
    let verifier: AppleNotificationVerifier

    /// The most transactions one receipt brings in (50 pages of Apple's 20): the most recently
    /// changed ones, so that a customer with more (a consumable bought daily for years) still has
    /// today's purchases and subscription found.
    static let mostTransactions = 1_000
}

extension ReceiptTransactionHistory {
    /// Every signed transaction of the customer `transactionID` belongs to, page by page: in
    /// Production, else in Sandbox when Production does not know the id (Apple's advice for
    /// receipts, which do not say their environment reliably). Asked newest first and given back
    /// oldest first: up to ``mostTransactions`` of the latest, in the order they happened.
    func all(of transactionID: String, bundleID: String, logger: Logger) async throws -> (PurchaseEnvironment?, [String]) {
        for environment in [PurchaseEnvironment.production, .sandbox] {
            var signed: [String] = []
            var revision: String?
            var found = false
            repeat {
                let page: AppStoreServerAPI.TransactionHistoryPage?
                do {
                    page = try await api.transactionHistory(
                        transactionID: transactionID, bundleID: bundleID, environment: environment, revision: revision, newestFirst: true,
                        logger: logger)
                } catch let error as ProviderAPIError {
                    throw Self.answer(to: error, logger: logger)
                }
                guard let page else { break }
                found = true
                signed += page.signedTransactions ?? []
                revision = page.revision
                if page.hasMore != true || revision == nil { break }
            } while signed.count < Self.mostTransactions
            if found { return (environment, Array(signed.prefix(Self.mostTransactions).reversed())) }
        }
        throw APIError(.notFound, code: "transaction_not_found", message: "the App Store knows no transaction \(transactionID.prefix(64)) of this receipt")
    }

    /// What the app is told when Apple's answer was a failure (after ``ProviderCall``'s retries):
    /// Apple unavailable (no answer, `429`, `5xx`) is `503 app_store_unavailable` with
    /// `Retry-After`, for the app to send the receipt again; Apple refusing Sluice (`401`: the
    /// App Store Server API key is wrong or revoked; any other `4xx`) is `502 app_store_refused`,
    /// logged as an error for the operator, since sending again changes nothing; a success whose
    /// body is not the documented JSON is `502 app_store_unreadable`, logged likewise.
    static func answer(to error: ProviderAPIError, logger: Logger) -> APIError {
        let status = error.status.map(String.init) ?? "none"
        if let code = error.status, (200..<300).contains(code) {
            logger.error("the App Store Server API answered with a body Sluice cannot read", metadata: ["status": "\(status)", "error": "\(error.message)"])
            return APIError(.badGateway, code: "app_store_unreadable", message: "the App Store Server API answered, but not with the documented JSON")
        }
        if error.isUnavailable {
            logger.warning("the App Store Server API is unavailable", metadata: ["status": "\(status)"])
            return APIError(
                .serviceUnavailable, code: "app_store_unavailable", message: "the App Store Server API is unavailable: \(error)",
                headers: [.retryAfter: "30"])
        }
        switch error.status {
        case 401?:
            logger.error("the App Store Server API refused Sluice's key: check APPLE_API_KEY_ID, APPLE_API_ISSUER_ID and APPLE_API_PRIVATE_KEY_FILE",
                         metadata: ["status": "\(status)"])
            return APIError(.badGateway, code: "app_store_refused", message: "the App Store Server API refused this server's credentials")
        default:
            logger.error("the App Store Server API refused the request", metadata: ["status": "\(status)", "error": "\(error.message)"])
            return APIError(.badGateway, code: "app_store_refused", message: "the App Store Server API refused the request: \(error)")
        }
    }
}
