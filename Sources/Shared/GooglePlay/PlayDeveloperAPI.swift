// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
public import Foundation
public import Logging
public import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// The Google Play Developer API (Android Publisher v3) calls Sluice makes, authorized by the
/// service account's access token: a subscription's state (`purchases.subscriptionsv2.get`), a
/// one-time product purchase's (`purchases.products.get`), their acknowledgement, and the voided
/// purchases list.
///
/// Purchase answers are returned as Google sent them (the bytes), to be stored before they are
/// applied; a token Google no longer knows (`404`, `410`) is `nil`.
public struct PlayDeveloperAPI: Sendable {
    /// The `provider` of this API's ``ProviderAPIError``s (the OAuth token endpoint's are `Google OAuth`).
    public static let provider = "Google Play Developer"

    let call: ProviderCall
    let account: GoogleServiceAccount
    let baseURL: String
    let logger: Logger

    public init(call: ProviderCall, account: GoogleServiceAccount, baseURL: String, logger: Logger) {
        self.call = call
        self.account = account
        self.baseURL = baseURL
        self.logger = logger
    }

    /// `GET …/purchases/subscriptionsv2/tokens/{token}`: the `SubscriptionPurchaseV2`'s JSON.
    public func subscription(packageName: String, token: String) async throws -> ByteBuffer? {
        try await purchase(path: "\(application(packageName))/purchases/subscriptionsv2/tokens/\(Self.segment(token))", what: "subscription")
    }

    /// `GET …/purchases/products/{productId}/tokens/{token}`: the `ProductPurchase`'s JSON.
    public func product(packageName: String, productID: String, token: String) async throws -> ByteBuffer? {
        try await purchase(
            path: "\(application(packageName))/purchases/products/\(Self.segment(productID))/tokens/\(Self.segment(token))", what: "product purchase")
    }

    /// `GET …/orders/{orderId}` (the Orders API): the `Order`'s JSON; `nil` when Google does not
    /// know it. The service account needs the "View financial data" permission.
    public func order(packageName: String, orderID: String) async throws -> ByteBuffer? {
        try await purchase(path: "\(application(packageName))/orders/\(Self.segment(orderID))", what: "order")
    }

    /// `POST …/purchases/subscriptions/{subscriptionId}/tokens/{token}:acknowledge` or
    /// `…/purchases/products/{productId}/tokens/{token}:acknowledge`, with an empty
    /// `developerPayload`. Google answers `200` with an empty body.
    ///
    /// - Throws: ``ProviderAPIError`` for any other answer (`400 invalidPurchaseState` when the
    ///   purchase is no longer one that can be acknowledged).
    public func acknowledge(packageName: String, kind: PlayProductKind, productID: String, token: String) async throws {
        let collection = kind == .subscription ? "subscriptions" : "products"
        let path = "\(application(packageName))/purchases/\(collection)/\(Self.segment(productID))/tokens/\(Self.segment(token)):acknowledge"
        let answer = try await send(path, body: #"{"developerPayload":""}"#)
        guard (200..<300).contains(answer.status) else {
            throw ProviderAPIError(provider: Self.provider, status: answer.status, message: Self.errorReason(answer.body))
        }
    }

    /// One page of `GET …/purchases/voidedpurchases` (`type=1`: subscriptions too), voided from
    /// `start` on; `pageToken` continues a listing. `includeQuantityBasedPartialRefund=true`: a
    /// refund of some of a purchase's units (`voidedQuantity`) is listed only when asked for, and
    /// without it such a refund whose notification was lost would never be found.
    public func voidedPurchases(packageName: String, from start: Date, pageToken: String?) async throws -> PlayVoidedPurchasesPage {
        var path = "\(application(packageName))/purchases/voidedpurchases?type=1&maxResults=1000&includeQuantityBasedPartialRefund=true"
        if let pageToken {
            path += "&token=" + Self.segment(pageToken)
        } else {
            path += "&startTime=\(Int64(start.timeIntervalSince1970 * 1_000))"
        }
        let answer = try await send(path)
        guard (200..<300).contains(answer.status) else {
            throw ProviderAPIError(provider: Self.provider, status: answer.status, message: Self.errorReason(answer.body))
        }
        do {
            return try JSONDecoder().decode(PlayVoidedPurchasesPage.self, from: answer.body)
        } catch {
            throw ProviderAPIError(provider: Self.provider, status: answer.status, message: "the voided purchases answer is not the documented JSON")
        }
    }

    private func purchase(path: String, what: String) async throws -> ByteBuffer? {
        let answer = try await send(path)
        if answer.status == 404 || answer.status == 410 { return nil }
        guard (200..<300).contains(answer.status) else {
            throw ProviderAPIError(provider: Self.provider, status: answer.status, message: "\(what): " + Self.errorReason(answer.body))
        }
        return answer.body
    }

    private func application(_ packageName: String) -> String {
        "/androidpublisher/v3/applications/\(Self.segment(packageName))"
    }

    /// A `GET`, or a `POST` of `body`, with the service account's token; a `401` (a token Google
    /// revoked before its end) is tried once more with a new one.
    private func send(_ path: String, body: String? = nil) async throws -> (status: Int, body: ByteBuffer) {
        var answer = try await call.send(try await request(path, body: body), logger: logger)
        if answer.status == 401 {
            account.forgetToken()
            answer = try await call.send(try await request(path, body: body), logger: logger)
        }
        return answer
    }

    private func request(_ path: String, body: String?) async throws -> HTTPClientRequest {
        var request = HTTPClientRequest(url: baseURL + path)
        request.headers.add(name: "Authorization", value: "Bearer " + (try await account.accessToken(call: call, logger: logger)))
        request.headers.add(name: "Accept", value: "application/json")
        if let body {
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        return request
    }

    /// A path segment: purchase tokens are URL-safe, but nothing a caller passes is trusted to be.
    static func segment(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// Google's `{"error": {"code", "message", "errors": [{"reason"}]}}`: the first reason, or the
    /// message, shortened.
    static func errorReason(_ body: ByteBuffer) -> String {
        struct GoogleError: Decodable {
            struct Body: Decodable {
                struct Item: Decodable { var reason: String? }
                var message: String?
                var errors: [Item]?
            }

            var error: Body?
        }
        guard let error = try? JSONDecoder().decode(GoogleError.self, from: body).error else { return "an error without Google's error body" }
        return String((error.errors?.first?.reason ?? error.message ?? "?").prefix(200))
    }
}

/// Whether a Play product is a subscription or a one-time product: the API's resource and how
/// its purchases are acknowledged.
public enum PlayProductKind: String, Sendable, Codable {
    case subscription
    case product
}
