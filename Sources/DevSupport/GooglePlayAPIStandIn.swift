// SPDX-License-Identifier: Apache-2.0
import Crypto
import CryptoExtras
public import Foundation
import HTTPTypes
public import Hummingbird
import NIOCore
import NIOFoundationCompat
import Shared
import Synchronization

/// Google's side of the Play Developer API, built from Google's documentation: the OAuth 2.0 token
/// endpoint of a service account (the JWT-bearer grant: the assertion's RS256 signature by the
/// account's key, `iss` its email, `aud` the token URI, the androidpublisher scope, at most an
/// hour long; `{"error": "invalid_grant"}` otherwise), and Android Publisher v3's
/// `purchases.subscriptionsv2.get`, `purchases.products.get`, both `:acknowledge`s (an empty `200`;
/// `400 invalidPurchaseState` for one already acknowledged), `purchases.voidedpurchases.list` and
/// the Orders API's `orders.get` (`403` for a service account without financial data, when set),
/// answering Google's error body (`404 purchaseTokenNotFound`, `401`) where Google does.
public final class GooglePlayAPIStandIn: Sendable {
    public static let email = "sluice-play@sluice-test.iam.gserviceaccount.com"

    private struct State {
        var subscriptions: [String: [String: any Sendable]] = [:]
        var products: [String: [String: any Sendable]] = [:]
        var voided: [[String: any Sendable]] = []
        var orders: [String: [String: any Sendable]] = [:]
        var ordersForbidden = false
        var ordersHang: Duration = .zero
        var acknowledgementsHang: Duration = .zero
        var orderRequests = 0
        var acknowledgements: [String: Int] = [:]
        var acknowledgementRequests: [String: Int] = [:]
        var tokensIssued = 0
        var issued: Set<String> = []
        var failAcknowledgements = 0
        var voidedPageSize = 1_000
    }

    private let state = Mutex(State())
    private let key: _RSA.Signing.PrivateKey

    public init() throws {
        key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
    }

    /// The stand-in of the service account whose key file is `keyFile` (one ``keyFile(base:)`` wrote).
    public init(keyFile: Data) throws {
        struct File: Decodable { var private_key: String }
        key = try _RSA.Signing.PrivateKey(pemRepresentation: try JSONDecoder().decode(File.self, from: keyFile).private_key)
    }

    /// The service account's JSON key file, its `token_uri` at `base`.
    public func keyFile(base: String) throws -> Data {
        try JSONSerialization.data(withJSONObject: [
            "type": "service_account", "project_id": "sluice-test", "private_key_id": "0123456789abcdef",
            "private_key": key.pemRepresentation, "client_email": Self.email, "client_id": "1234567890",
            "token_uri": base + "/token",
        ], options: [.sortedKeys])
    }

    /// Writes the key file to a fresh temporary path and returns it.
    public func writeKeyFile(base: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("play-key-\(UUID().uuidString).json").path
        try keyFile(base: base).write(to: URL(fileURLWithPath: path))
        return path
    }

    public func setSubscription(_ token: String, _ purchase: [String: any Sendable]) { state.withLock { $0.subscriptions[token] = purchase } }
    public func setProduct(_ token: String, _ purchase: [String: any Sendable]) { state.withLock { $0.products[token] = purchase } }
    public func addVoided(_ voided: [String: any Sendable]) { state.withLock { $0.voided.append(voided) } }
    /// An `Order` for `orders.get` (``SamplePlayPurchases/order(_:token:product:total:)``), by its `orderId`.
    public func setOrder(_ order: [String: any Sendable]) { state.withLock { $0.orders[order["orderId"] as? String ?? ""] = order } }
    /// Answers `orders.get` with Google's `403`: a service account without "View financial data".
    public func forbidOrders() { state.withLock { $0.ordersForbidden = true } }
    /// Answers `orders.get` only after `delay`: an Orders API that hangs.
    public func hangOrders(for delay: Duration) { state.withLock { $0.ordersHang = delay } }
    /// How many `orders.get` requests were answered.
    public var orderRequests: Int { state.withLock { $0.orderRequests } }
    /// Voided purchases per page (`maxResults` caps it too).
    public func setVoidedPageSize(_ size: Int) { state.withLock { $0.voidedPageSize = size } }
    /// Acknowledgements are answered only after `delay` (recorded as requested at once): a Google
    /// slow to answer.
    public func hangAcknowledgements(for delay: Duration) { state.withLock { $0.acknowledgementsHang = delay } }
    /// The next `count` acknowledgements answer `503`.
    public func failAcknowledgements(_ count: Int) { state.withLock { $0.failAcknowledgements = count } }
    /// How many times each token was acknowledged (taken, not refused).
    public var acknowledgements: [String: Int] { state.withLock { $0.acknowledgements } }
    /// How many acknowledgement requests each token had, refused ones too.
    public var acknowledgementRequests: [String: Int] { state.withLock { $0.acknowledgementRequests } }
    public var tokensIssued: Int { state.withLock { $0.tokensIssued } }

    public func addRoutes(to router: Router<BasicRequestContext>) {
        router.post("/token") { request, _ -> Response in
            let form = String(buffer: try await request.body.collect(upTo: 1 << 16))
            let fields = Dictionary(form.split(separator: "&").map { pair -> (String, String) in
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
                return (parts[0], parts.count > 1 ? parts[1] : "")
            }, uniquingKeysWith: { $1 })
            guard fields["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let assertion = fields["assertion"],
                  let problem = self.check(assertion: assertion, tokenURI: "http://\(request.head.authority ?? "")/token"), problem.isEmpty
            else {
                return Self.json(.badRequest, ["error": "invalid_grant", "error_description": "Invalid JWT Signature."])
            }
            let token = "ya29." + UUID().uuidString
            self.state.withLock { state in
                state.tokensIssued += 1
                state.issued.insert(token)
            }
            return Self.json(.ok, ["access_token": token, "expires_in": 3599, "token_type": "Bearer"])
        }
        let app = "/androidpublisher/v3/applications/:package/purchases"
        router.get(RouterPath(stringLiteral: app + "/subscriptionsv2/tokens/:token")) { request, context -> Response in
            if let refusal = self.refusal(request) { return refusal }
            let token = context.parameters.get("token") ?? ""
            let (subscription, isProduct) = self.state.withLock { ($0.subscriptions[token], $0.products[token] != nil) }
            // Google answers a one-time product's token asked as a subscription with a 400.
            if isProduct { return Self.error(400, "invalid", "Invalid Value") }
            guard let subscription else { return Self.notFound() }
            return Self.json(.ok, subscription)
        }
        router.get(RouterPath(stringLiteral: app + "/products/:product/tokens/:token")) { request, context -> Response in
            if let refusal = self.refusal(request) { return refusal }
            let token = context.parameters.get("token") ?? ""
            guard let purchase = self.state.withLock({ $0.products[token] }) else { return Self.notFound() }
            guard purchase["productId"] as? String == context.parameters.get("product") else {
                return Self.error(400, "purchaseTokenDoesNotMatchProductId", "The purchase token does not match the product ID.")
            }
            return Self.json(.ok, purchase)
        }
        for collection in ["subscriptions", "products"] {
            // `{token}:acknowledge` is one path segment.
            router.post(RouterPath(stringLiteral: app + "/\(collection)/:product/tokens/:token")) { request, context -> Response in
                if let refusal = self.refusal(request) { return refusal }
                let action = context.parameters.get("token") ?? ""
                guard action.hasSuffix(":acknowledge") else { return Self.notFound() }
                let token = String(action.dropLast(":acknowledge".count))
                let hang = self.state.withLock { state in
                    if state.acknowledgementsHang > .zero { state.acknowledgementRequests[token, default: 0] += 1 }
                    return state.acknowledgementsHang
                }
                if hang > .zero {
                    try await Task.sleep(for: hang)
                    return Self.error(503, "backendError", "Backend Error")
                }
                return self.acknowledge(token, subscription: collection == "subscriptions")
            }
        }
        router.get("/androidpublisher/v3/applications/:package/orders/:order") { request, context -> Response in
            if let refusal = self.refusal(request) { return refusal }
            let (order, forbidden, hang) = self.state.withLock { state in
                state.orderRequests += 1
                return (state.orders[context.parameters.get("order") ?? ""], state.ordersForbidden, state.ordersHang)
            }
            if hang > .zero { try await Task.sleep(for: hang) }
            if forbidden { return Self.error(403, "permissionDenied", "The caller does not have permission") }
            guard let order else { return Self.error(404, "notFound", "The order was not found.") }
            return Self.json(.ok, order)
        }
        // Pages of `maxResults` (at most the page size set), continued by `token`: an offset here.
        // A refund of some units (`voidedQuantity`) is listed only with
        // `includeQuantityBasedPartialRefund=true`, as Google documents (default false).
        router.get(RouterPath(stringLiteral: app + "/voidedpurchases")) { request, _ -> Response in
            if let refusal = self.refusal(request) { return refusal }
            let query = request.uri.queryParameters
            let partialRefunds = query["includeQuantityBasedPartialRefund"] == "true"
            let (all, pageSize) = self.state.withLock { state in
                (state.voided.filter { partialRefunds || $0["voidedQuantity"] == nil }, state.voidedPageSize)
            }
            let size = min(pageSize, query["maxResults"].flatMap { Int(String($0)) } ?? 1_000)
            let start = query["token"].flatMap { Int(String($0)) } ?? 0
            let page = Array(all.dropFirst(start).prefix(size))
            var answer: [String: any Sendable] = ["voidedPurchases": page]
            if start + size < all.count { answer["tokenPagination"] = ["nextPageToken": String(start + size)] }
            return Self.json(.ok, answer)
        }
    }

    private func acknowledge(_ token: String, subscription: Bool) -> Response {
        state.withLock { state -> Response in
            state.acknowledgementRequests[token, default: 0] += 1
            if state.failAcknowledgements > 0 {
                state.failAcknowledgements -= 1
                return Self.error(503, "backendError", "Backend Error")
            }
            let acknowledged: Bool
            // Only a purchase in the purchased state can be acknowledged (Google: invalidPurchaseState).
            let refused = Self.error(400, "invalidPurchaseState", "The purchase is not in a valid state to perform the desired operation.")
            if subscription {
                guard var purchase = state.subscriptions[token] else { return Self.notFound() }
                let paid = ["SUBSCRIPTION_STATE_ACTIVE", "SUBSCRIPTION_STATE_CANCELED", "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"]
                guard paid.contains(purchase["subscriptionState"] as? String ?? "") else { return refused }
                acknowledged = purchase["acknowledgementState"] as? String == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
                purchase["acknowledgementState"] = "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
                state.subscriptions[token] = purchase
            } else {
                guard var purchase = state.products[token] else { return Self.notFound() }
                guard purchase["purchaseState"] as? Int == 0 else { return refused }
                acknowledged = purchase["acknowledgementState"] as? Int == 1
                purchase["acknowledgementState"] = 1
                state.products[token] = purchase
            }
            guard !acknowledged else {
                return Self.error(400, "invalidPurchaseState", "The purchase is not in a valid state to perform the desired operation.")
            }
            state.acknowledgements[token, default: 0] += 1
            return Response(status: .ok, headers: [.contentType: "application/json; charset=UTF-8"], body: .init(byteBuffer: ByteBuffer(string: "{}")))
        }
    }

    /// Why the assertion is refused, `""` when it is good, `nil` when it cannot be read.
    private func check(assertion: String, tokenURI: String) -> String? {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(parts[0]), let claims = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let headerObject = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any],
              let claimsObject = try? JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any]
        else { return nil }
        let input = Data((parts[0] + "." + parts[1]).utf8)
        guard headerObject["alg"] as? String == "RS256",
              key.publicKey.isValidSignature(.init(rawRepresentation: signature), for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5)
        else { return "signature" }
        guard claimsObject["iss"] as? String == Self.email, claimsObject["aud"] as? String == tokenURI,
              (claimsObject["scope"] as? String)?.split(separator: " ").contains("https://www.googleapis.com/auth/androidpublisher") == true,
              let iat = claimsObject["iat"] as? Double, let exp = claimsObject["exp"] as? Double, exp > iat, exp - iat <= 3_600,
              abs(iat - Date().timeIntervalSince1970) < 300
        else { return "claims" }
        return ""
    }

    private func refusal(_ request: Request) -> Response? {
        let bearer = request.headers[.authorization].map { String($0.dropFirst("Bearer ".count)) } ?? ""
        guard state.withLock({ $0.issued.contains(bearer) }) else {
            return Self.error(401, "authError", "Request is missing required authentication credential.")
        }
        return nil
    }

    private static func notFound() -> Response {
        error(404, "purchaseTokenNotFound", "The purchase token was not found.")
    }

    private static func error(_ code: Int, _ reason: String, _ message: String) -> Response {
        json(HTTPResponse.Status(code: code), [
            "error": ["code": code, "message": message, "errors": [["domain": "androidpublisher", "reason": reason, "message": message]]] as [String: any Sendable],
        ])
    }

    private static func json(_ status: HTTPResponse.Status, _ object: [String: any Sendable]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return Response(status: status, headers: [.contentType: "application/json; charset=UTF-8"], body: .init(byteBuffer: ByteBuffer(data: data)))
    }
}

/// `SubscriptionPurchaseV2` and `ProductPurchase` objects shaped as Google documents them.
public enum SamplePlayPurchases {
    /// A subscription in `state` (`SUBSCRIPTION_STATE_ACTIVE`, …) of one auto-renewing line item.
    public static func subscription(
        state: String, product: String = "pro", basePlan: String = "monthly", expiry: Date, autoRenew: Bool = true,
        order: String = "GPA.3331-7311-8633-87504", acknowledged: Bool = false, account: String? = nil, linkedPurchaseToken: String? = nil,
        test: Bool = false, started: Date = Date(timeIntervalSinceNow: -60), price: (currency: String, units: String, nanos: Int) = ("EUR", "6", 990_000_000),
        phase: String = "basePrice"
    ) -> [String: any Sendable] {
        var purchase: [String: any Sendable] = [
            "kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": "DE", "startTime": rfc3339(started), "subscriptionState": state,
            "latestOrderId": order,
            "acknowledgementState": acknowledged ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING",
            "lineItems": [[
                "productId": product, "expiryTime": rfc3339(expiry),
                "autoRenewingPlan": ["autoRenewEnabled": autoRenew,
                                     "recurringPrice": ["currencyCode": price.currency, "units": price.units, "nanos": price.nanos] as [String: any Sendable]] as [String: any Sendable],
                "offerDetails": ["basePlanId": basePlan] as [String: any Sendable],
                "offerPhase": [phase: [String: String]()] as [String: any Sendable],
                "latestSuccessfulOrderId": order,
            ] as [String: any Sendable]],
        ]
        if let account { purchase["externalAccountIdentifiers"] = ["obfuscatedExternalAccountId": account] }
        if let linkedPurchaseToken { purchase["linkedPurchaseToken"] = linkedPurchaseToken }
        if test { purchase["testPurchase"] = [String: String]() }
        if state == "SUBSCRIPTION_STATE_CANCELED" {
            purchase["canceledStateContext"] = ["userInitiatedCancellation": ["cancelTime": rfc3339(Date())]]
        }
        return purchase
    }

    /// A one-time product purchase: `purchaseState` 0 purchased, 1 canceled, 2 pending; `quantity`
    /// of it bought at once, of which `refunded` were refunded since (`refundableQuantity`, the rest).
    public static func product(
        _ product: String, state: Int = 0, order: String = "GPA.1234-5678-9012-34567", acknowledged: Bool = false, account: String? = nil,
        purchased: Date = Date(timeIntervalSinceNow: -60), quantity: Int = 1, refunded: Int = 0
    ) -> [String: any Sendable] {
        var purchase: [String: any Sendable] = [
            "kind": "androidpublisher#productPurchase", "purchaseTimeMillis": String(Int64(purchased.timeIntervalSince1970 * 1_000)),
            "purchaseState": state, "consumptionState": 0, "developerPayload": "", "orderId": order, "acknowledgementState": acknowledged ? 1 : 0,
            "productId": product, "quantity": quantity, "refundableQuantity": quantity - refunded, "regionCode": "US",
        ]
        if let account { purchase["obfuscatedExternalAccountId"] = account }
        return purchase
    }

    /// An `Order` of the Orders API for `orderID`, of one line item of `product` bought with
    /// `token`: `total` is what the buyer paid, tax included, the tax a fifth of it here.
    public static func order(
        _ orderID: String, token: String, product: String, total: (currency: String, units: String, nanos: Int),
        created: Date = Date(timeIntervalSinceNow: -60)
    ) -> [String: any Sendable] {
        let money = { (units: String, nanos: Int) -> [String: any Sendable] in ["currencyCode": total.currency, "units": units, "nanos": nanos] }
        let whole = (Int64(total.units) ?? 0) * 1_000_000_000 + Int64(total.nanos)
        let tax = whole / 5
        let taxMoney = money(String(tax / 1_000_000_000), Int(tax % 1_000_000_000))
        return [
            "orderId": orderID, "purchaseToken": token, "state": "PROCESSED", "createTime": rfc3339(created), "lastEventTime": rfc3339(created),
            "buyerAddress": ["buyerCountry": "DE"] as [String: any Sendable],
            "total": money(total.units, total.nanos), "tax": taxMoney,
            "lineItems": [[
                "productId": product, "productTitle": product, "listingPrice": money(total.units, total.nanos),
                "total": money(total.units, total.nanos), "tax": taxMoney,
            ] as [String: any Sendable]],
        ]
    }

    public static func rfc3339(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
