// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Shared

/// `POST /v1/iap/play-purchases` (server or client key): an app's Google Play purchase, verified
/// with the Play Developer API and stored for its user (``PlayPurchaseSyncs``). `202` when stored,
/// `200` when the same state was stored for the user before.
struct PlayPurchaseController<Context: RemoteAddressRequestContext>: Sendable {
    /// `nil` without `GOOGLE_PLAY_SERVICE_ACCOUNT_FILE` (and `GOOGLE_PLAY_PACKAGE_NAMES`) on ingest: `503`.
    let syncs: PlayPurchaseSyncs?
    let apiKeys: APIKeyCheck
    let receiver: EventReceiver

    static var path: RouterPath { "/v1/iap/play-purchases" }

    func addRoutes(to router: Router<Context>) {
        router.post(Self.path, use: sync)
    }

    @Sendable func sync(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireAny(request, from: context.remoteAddress)
        guard let syncs else {
            throw APIError(
                .serviceUnavailable, code: "play_not_configured",
                message: "Google Play syncs need GOOGLE_PLAY_SERVICE_ACCOUNT_FILE and GOOGLE_PLAY_PACKAGE_NAMES on ingest")
        }
        let body = try await receiver.readBody(request, source: .playPurchase)
        let stored = try await syncs.sync(body: body, logger: context.logger)
        return WebhookController<Context>.json(stored ? .accepted : .ok, #"{"received":true}"#)
    }
}
