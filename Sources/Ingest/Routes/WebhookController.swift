// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import HTTPTypes
import NIOCore
import Shared
import Logging

/// `POST /v1/webhooks/stripe`, `POST /v1/webhooks/appstore-notifications[/]`,
/// `POST /v1/webhooks/google-play` and `POST /v1/iap/storekit-transactions`: verify, store, answer.
struct WebhookController<Context: RemoteAddressRequestContext>: Sendable {
    let receiver: EventReceiver
    /// `nil` when `STRIPE_WEBHOOK_SECRETS` is empty: the endpoint answers 503.
    let stripe: StripeSignatureVerifier?
    /// `nil` when `APPLE_BUNDLE_IDS` is not set: the Apple endpoints answer 503.
    let apple: AppleNotificationVerifier?
    /// `nil` when `GOOGLE_PLAY_PACKAGE_NAMES` is not set: the Play endpoint answers 503.
    var play: PlayPushVerifier?
    let apiKeys: APIKeyCheck
    /// Whose each registered `appAccountToken` is: a sync naming a token's user is that user's.
    let tokens: AppAccountTokens
    /// At most `SYNC_MAX_USERS_PER_TRANSACTION` users per purchase.
    let syncUsers: StoreKitSyncUsers
    /// The sync's reads (the token's owner, the purchase's users) bounded by `DATABASE_TIMEOUT_SECONDS`.
    var database = DatabaseCalls(limit: .seconds(5))

    static var stripePath: RouterPath { "/v1/webhooks/stripe" }
    static var applePath: RouterPath { "/v1/webhooks/appstore-notifications" }
    static var storeKitPath: RouterPath { "/v1/iap/storekit-transactions" }
    static var playPath: RouterPath { "/v1/webhooks/google-play" }

    func addRoutes(to router: Router<Context>) {
        router.post(Self.stripePath, use: receiveStripe)
        router.post(Self.applePath, use: receiveApple)
        router.post(Self.storeKitPath, use: receiveStoreKit)
        router.post(Self.playPath, use: receivePlay)
    }

    /// A Pub/Sub push: any `2xx` acknowledges it (a redelivery, stored before, too); anything else
    /// has Pub/Sub push it again, with backoff, for up to its retention.
    @Sendable func receivePlay(_ request: Request, context: Context) async throws -> Response {
        guard let play else {
            context.logger.error("Google Play push refused: GOOGLE_PLAY_PACKAGE_NAMES is not set")
            throw APIError.unavailable("the Google Play endpoint is not configured")
        }
        let body = try await receiver.readBody(request, source: .play)
        let record = try await receiver.verify(source: .play, logger: context.logger) { () async throws(Rejection) in
            try await play.verify(body: body, authorization: request.headers[.authorization], now: Date())
        }
        _ = try await receiver.store(record, logger: context.logger)
        return Self.json(.ok, #"{"received":true}"#)
    }

    @Sendable func receiveStripe(_ request: Request, context: Context) async throws -> Response {
        guard let stripe else {
            context.logger.error("Stripe event refused: STRIPE_WEBHOOK_SECRETS is not set")
            throw APIError.unavailable("the Stripe endpoint is not configured")
        }
        let body = try await receiver.readBody(request, source: .stripe)
        let record = try await receiver.verify(source: .stripe, logger: context.logger) { () throws(Rejection) in
            try stripe.verify(body: body.readableBytesView, header: request.headers[.stripeSignature], now: Date())
            return try StripeEventEnvelope.decode(body).record(payload: body)
        }
        _ = try await receiver.store(record, logger: context.logger)
        return Self.json(.ok, #"{"received":true}"#)
    }

    @Sendable func receiveApple(_ request: Request, context: Context) async throws -> Response {
        let apple = try configuredApple(context)
        let sandbox = Self.isSandbox(request)
        let body = try await receiver.readBody(request, source: .apple)
        let record = try await receiver.verify(source: .apple, logger: context.logger) { () async throws(Rejection) in
            try await apple.verifyNotification(body: body, sandbox: sandbox)
        }
        _ = try await receiver.store(record, logger: context.logger)
        return Self.json(.ok, #"{"received":true}"#)
    }

    @Sendable func receiveStoreKit(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireAny(request, from: context.remoteAddress)
        let apple = try configuredApple(context)
        // Either environment: the signed transaction says which (`?sandbox=true` is accepted and ignored).
        let body = try await receiver.readBody(request, source: .storekit)
        let syncs = StoreKitSyncs(receiver: receiver, apple: apple, tokens: tokens, syncUsers: syncUsers, database: database)
        let (transactionID, stored) = try await syncs.sync(body: body, logger: context.logger)
        let answer = try JSONSerialization.data(withJSONObject: ["transaction_id": transactionID])
        return Self.json(stored ? .accepted : .ok, String(decoding: answer, as: UTF8.self))
    }

    private func configuredApple(_ context: Context) throws -> AppleNotificationVerifier {
        guard let apple else {
            context.logger.error("Apple payload refused: APPLE_BUNDLE_IDS is not set")
            throw APIError.unavailable("the Apple endpoints are not configured")
        }
        return apple
    }

    /// `?sandbox=true` (or `1`) selects Sandbox; anything else is Production.
    static func isSandbox(_ request: Request) -> Bool {
        guard let value = request.uri.queryParameters["sandbox"] else { return false }
        return value == "true" || value == "1"
    }

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
