// SPDX-License-Identifier: Apache-2.0
public import Crypto
public import Foundation
public import HTTPTypes
public import Hummingbird
import NIOCore
public import Shared
import Synchronization
import NIOFoundationCompat

/// A local App Store Server API, built from Apple's documented requests and answers: it checks
/// each bearer token (ES256 with the test key, `kid`, `iss`, `aud`, `bid`, `exp` at most an hour
/// after `iat`), serves Get Notification History in pages of 20 with `paginationToken` / `hasMore`
/// and Get All Subscription Statuses, misbehaves when told (`429` with Apple's `Retry-After`, `500`,
/// slow answers) and records what it was asked. Sandbox is served under `/sandbox`.
public final class AppStoreServerAPIStandIn: Sendable {
    /// A notification Apple tried to send.
    public struct Notification: Sendable {
        public var signedPayload: String
        public var signedDate: Date
        public var environment: PurchaseEnvironment
        /// Whether Apple's sends failed (`onlyFailures` returns these).
        public var failed: Bool

        public init(signedPayload: String, signedDate: Date, environment: PurchaseEnvironment, failed: Bool) {
            self.signedPayload = signedPayload
            self.signedDate = signedDate
            self.environment = environment
            self.failed = failed
        }
    }

    /// One subscription's answer in Get All Subscription Statuses.
    public struct Status: Sendable {
        public var status: Int
        public var signedTransactionInfo: String
        public var signedRenewalInfo: String?

        public init(status: Int, signedTransactionInfo: String, signedRenewalInfo: String? = nil) {
            self.status = status
            self.signedTransactionInfo = signedTransactionInfo
            self.signedRenewalInfo = signedRenewalInfo
        }
    }

    /// One request as it arrived.
    public struct Request: Sendable {
        public var path: String
        public var environment: PurchaseEnvironment
        public var bundleID: String?
        public var body: [String: any Sendable]
        public var paginationToken: String?
        /// Why the token was refused, when it was.
        public var tokenProblem: String?
        /// The query string as sent (`sort=DESCENDING&revision=…`).
        public var query: String = ""
    }

    /// A Send Consumption Information Apple took.
    public struct Consumption: Sendable {
        public var transactionID: String
        public var environment: PurchaseEnvironment
        /// The body as sent, keys sorted.
        public var body: String
    }

    /// How to answer the `n`th request instead of serving it.
    public enum Misbehaviour: Sendable {
        case status(Int, retryAfter: String? = nil)
        /// This status with this body (a success that is not the documented JSON, say).
        case answer(Int, body: String)
        case delay(Duration)
    }

    public static let keyID = "STANDIN123"
    public static let issuerID = "57246542-96fe-1a63-e053-0824d011072a"
    public static let pageSize = 20

    private struct State {
        var notifications: [Notification] = []
        var statuses: [String: Status] = [:]
        /// Get Transaction History: a customer's signed transactions, by each of their ids, per environment.
        var histories: [PurchaseEnvironment: [String: [String]]] = [:]
        /// Send Consumption Information bodies Apple took, in order.
        var consumption: [Consumption] = []
        var requests: [Request] = []
        var misbehave: @Sendable (Int, Request) -> Misbehaviour? = { _, _ in nil }
    }

    private let state = Mutex(State())
    public let key = P256.Signing.PrivateKey()
    public let bundleIDs: Set<String>
    /// Set once the server listens.
    private let baseBox = Mutex("")
    public var baseURL: String { baseBox.withLock { $0 } }

    init(bundleIDs: Set<String>) {
        self.bundleIDs = bundleIDs
    }

    public var consumption: [Consumption] { state.withLock { $0.consumption } }

    public var requests: [Request] { state.withLock { $0.requests } }

    public func add(_ notification: Notification) { state.withLock { $0.notifications.append(notification) } }
    public func setStatus(_ status: Status, originalTransactionID: String) { state.withLock { $0.statuses[originalTransactionID] = status } }
    /// A customer's transactions as Get Transaction History answers them, found by any of `ids`.
    public func setHistory(_ signedTransactions: [String], ids: [String], environment: PurchaseEnvironment) {
        state.withLock { state in
            for id in ids { state.histories[environment, default: [:]][id] = signedTransactions }
        }
    }

    public func misbehave(_ rule: @escaping @Sendable (Int, Request) -> Misbehaviour?) { state.withLock { $0.misbehave = rule } }

    /// Where ``privateKeyFile()`` writes: removed when ``with(bundleIDs:_:)`` returns.
    private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-standin-\(UUID().uuidString)")

    /// The `.p8` file a worker reads: the key as PKCS#8 PEM.
    public func privateKeyFile() throws -> String {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("AuthKey_\(Self.keyID).p8").path
        try key.pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The worker's environment that points at this stand-in.
    public func workerEnvironment() throws -> [String: String] {
        [
            "APPLE_API_KEY_ID": Self.keyID, "APPLE_API_ISSUER_ID": Self.issuerID, "APPLE_API_PRIVATE_KEY_FILE": try privateKeyFile(),
            "APPLE_API_BASE_URL": baseURL, "APPLE_API_SANDBOX_BASE_URL": baseURL + "/sandbox",
        ]
    }

    public static func with<Result: Sendable>(
        bundleIDs: Set<String>, _ body: @Sendable @escaping (AppStoreServerAPIStandIn) async throws -> Result
    ) async throws -> Result {
        let standIn = AppStoreServerAPIStandIn(bundleIDs: bundleIDs)
        defer { try? FileManager.default.removeItem(at: standIn.directory) }
        let router = Router()
        for (prefix, environment) in [("", PurchaseEnvironment.production), ("/sandbox", .sandbox)] {
            router.post(RouterPath(prefix + "/inApps/v1/notifications/history")) { request, _ in
                try await standIn.history(request, environment: environment)
            }
            router.get(RouterPath(prefix + "/inApps/v1/subscriptions/:transactionId")) { request, context in
                try await standIn.statuses(request, id: context.parameters.get("transactionId") ?? "", environment: environment)
            }
            router.put(RouterPath(prefix + "/inApps/v2/transactions/consumption/:transactionId")) { request, context in
                try await standIn.consume(request, id: context.parameters.get("transactionId") ?? "", environment: environment)
            }
            router.get(RouterPath(prefix + "/inApps/v2/history/:transactionId")) { request, context in
                try await standIn.transactionHistory(request, id: context.parameters.get("transactionId") ?? "", environment: environment)
            }
        }
        return try await LocalHTTPServer.run(router) { base in
            standIn.baseBox.withLock { $0 = base }
            return try await body(standIn)
        }
    }

    // MARK: Serving

    private func history(_ request: HummingbirdCore.Request, environment: PurchaseEnvironment) async throws -> Response {
        let data = try await request.body.collect(upTo: 1 << 20)
        let body = (try? JSONSerialization.jsonObject(with: Data(buffer: data)) as? [String: Any]) ?? [:]
        let token = request.uri.queryParameters["paginationToken"].map(String.init)
        if let answer = try await record(request, environment: environment, body: body, paginationToken: token) { return answer }
        guard let start = (body["startDate"] as? NSNumber)?.int64Value, let end = (body["endDate"] as? NSNumber)?.int64Value, start < end else {
            return Self.json(.badRequest, ["errorCode": 4000016, "errorMessage": "Invalid request. The start date is not valid."])
        }
        let onlyFailures = body["onlyFailures"] as? Bool ?? false
        let matching = state.withLock { $0.notifications }.filter { item in
            let millis = Int64(item.signedDate.timeIntervalSince1970 * 1000)
            return item.environment == environment && millis >= start && millis < end && (!onlyFailures || item.failed)
        }
        let offset = token.flatMap { Int($0.dropFirst()) } ?? 0
        let page = matching.dropFirst(offset).prefix(Self.pageSize)
        let next = offset + page.count
        return Self.json(.ok, [
            "notificationHistory": page.map { ["signedPayload": $0.signedPayload, "sendAttempts": [] as [Any]] },
            "hasMore": next < matching.count, "paginationToken": "p\(next)",
        ])
    }

    private func statuses(_ request: HummingbirdCore.Request, id: String, environment: PurchaseEnvironment) async throws -> Response {
        if let answer = try await record(request, environment: environment, body: [:], paginationToken: nil) { return answer }
        guard let status = state.withLock({ $0.statuses[id] }) else {
            return Self.json(.notFound, ["errorCode": 4040010, "errorMessage": "Transaction id not found."])
        }
        var item: [String: Any] = [
            "status": status.status, "originalTransactionId": id, "signedTransactionInfo": status.signedTransactionInfo,
        ]
        item["signedRenewalInfo"] = status.signedRenewalInfo
        return Self.json(.ok, [
            "environment": environment == .sandbox ? "Sandbox" : "Production", "bundleId": bundleIDs.first ?? "",
            "data": [["subscriptionGroupIdentifier": "21752814", "lastTransactions": [item]]],
        ])
    }

    /// Get Transaction History v2: pages of 20 signed transactions, `revision` the next page's
    /// token and `hasMore`, in the order set (oldest change first) or, with `sort=DESCENDING`,
    /// newest first; Apple's `4040010` for an id this environment does not know.
    private func transactionHistory(_ request: HummingbirdCore.Request, id: String, environment: PurchaseEnvironment) async throws -> Response {
        let revision = request.uri.queryParameters["revision"].map(String.init)
        if let answer = try await record(request, environment: environment, body: [:], paginationToken: revision) { return answer }
        guard var all = state.withLock({ $0.histories[environment]?[id] }) else {
            return Self.json(.notFound, ["errorCode": 4040010, "errorMessage": "Transaction id not found."])
        }
        if request.uri.queryParameters["sort"] == "DESCENDING" { all.reverse() }
        let offset = revision.flatMap { Int($0.dropFirst()) } ?? 0
        let page = all.dropFirst(offset).prefix(Self.pageSize)
        let next = offset + page.count
        return Self.json(.ok, [
            "revision": "r\(next)", "bundleId": bundleIDs.first ?? "", "appAppleId": 1234,
            "environment": environment == .sandbox ? "Sandbox" : "Production", "hasMore": next < all.count,
            "signedTransactions": Array(page),
        ])
    }

    /// Send Consumption Information (v2): Apple's `ConsumptionRequest` checked field by field as
    /// documented (`customerConsented` must be `true`; `deliveryStatus`, `refundPreference` from
    /// their lists; `consumptionPercentage` 0…100,000 milliunits; `sampleContentProvided` a
    /// Boolean; nothing else), then `202`.
    private func consume(_ request: HummingbirdCore.Request, id: String, environment: PurchaseEnvironment) async throws -> Response {
        let data = try await request.body.collect(upTo: 1 << 16)
        let body = (try? JSONSerialization.jsonObject(with: Data(buffer: data)) as? [String: Any]) ?? [:]
        if let answer = try await record(request, environment: environment, body: body, paginationToken: nil) { return answer }
        func refuse(_ message: String) -> Response { Self.json(.badRequest, ["errorCode": 4000000, "errorMessage": message]) }
        let allowed: Set = ["customerConsented", "consumptionPercentage", "deliveryStatus", "refundPreference", "sampleContentProvided"]
        if let unknown = body.keys.first(where: { !allowed.contains($0) }) { return refuse("Invalid request. Unknown field \(unknown).") }
        guard let consented = body["customerConsented"] as? Bool, consented else {
            return refuse("Invalid request. The customer consented field is invalid or doesn't indicate that the customer consented.")
        }
        let deliveries = ["DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER"]
        guard let delivery = body["deliveryStatus"] as? String, deliveries.contains(delivery) else {
            return refuse("Invalid request. The delivery status field is invalid.")
        }
        guard body["sampleContentProvided"] is Bool else { return refuse("Invalid request. The sample content provided field is invalid.") }
        if let percentage = body["consumptionPercentage"] {
            guard let value = percentage as? Int, (0...100_000).contains(value) else {
                return refuse("Invalid request. The consumption percentage field is invalid.")
            }
        }
        if let preference = body["refundPreference"] {
            guard let value = preference as? String, ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"].contains(value) else {
                return refuse("Invalid request. The refund preference field is invalid.")
            }
        }
        let sorted = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? ""
        state.withLock { $0.consumption.append(Consumption(transactionID: id, environment: environment, body: sorted)) }
        return Response(status: .accepted)
    }

    /// Records the request and answers it when its token is refused or it is told to misbehave.
    private func record(
        _ request: HummingbirdCore.Request, environment: PurchaseEnvironment, body: [String: Any], paginationToken: String?
    ) async throws -> Response? {
        let (bundleID, problem) = check(request.headers[.authorization])
        let sendableBody = body.mapValues { "\($0)" as any Sendable }
        let recorded = Request(
            path: request.uri.path, environment: environment, bundleID: bundleID, body: sendableBody, paginationToken: paginationToken,
            tokenProblem: problem, query: request.uri.query ?? "")
        let (number, rule) = state.withLock { state in
            state.requests.append(recorded)
            return (state.requests.count, state.misbehave)
        }
        if let problem { return Self.json(.unauthorized, ["errorCode": 401, "errorMessage": problem]) }
        switch rule(number, recorded) {
        case .status(let code, let retryAfter)?:
            var headers: HTTPFields = [:]
            if let retryAfter { headers[HTTPField.Name("Retry-After")!] = retryAfter }
            return Response(status: .init(code: code), headers: headers, body: .init(byteBuffer: ByteBuffer(string: #"{"errorCode":0}"#)))
        case .answer(let code, let text)?:
            return Response(status: .init(code: code), body: .init(byteBuffer: ByteBuffer(string: text)))
        case .delay(let duration)?:
            try await Task.sleep(for: duration)
            return nil
        case nil:
            return nil
        }
    }

    /// The token's bundle id, or why the token is refused.
    private func check(_ authorization: String?) -> (bundleID: String?, problem: String?) {
        guard let token = authorization?.split(separator: " ").last, authorization?.hasPrefix("Bearer ") == true else {
            return (nil, "no bearer token")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerData = Base64URL.decode(Substring(parts[0])), let claimsData = Base64URL.decode(Substring(parts[1])),
              let signatureData = Base64URL.decode(Substring(parts[2])),
              let header = try? JSONSerialization.jsonObject(with: Data(headerData)) as? [String: Any],
              let claims = try? JSONSerialization.jsonObject(with: Data(claimsData)) as? [String: Any]
        else { return (nil, "not a JWT") }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
              key.publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else { return (nil, "bad signature") }
        guard header["alg"] as? String == "ES256", header["typ"] as? String == "JWT", header["kid"] as? String == Self.keyID else {
            return (nil, "wrong header")
        }
        let now = Date().timeIntervalSince1970
        guard claims["iss"] as? String == Self.issuerID, claims["aud"] as? String == "appstoreconnect-v1",
              let iat = (claims["iat"] as? NSNumber)?.doubleValue, let exp = (claims["exp"] as? NSNumber)?.doubleValue,
              exp > now, iat <= now + 60, exp - iat <= 3_600
        else { return (nil, "wrong claims or expired") }
        guard let bid = claims["bid"] as? String, bundleIDs.contains(bid) else { return (nil, "wrong bid") }
        return (bid, nil)
    }

    public static func json(_ status: HTTPResponse.Status, _ object: [String: Any]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: data)))
    }
}
