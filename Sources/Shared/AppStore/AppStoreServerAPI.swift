// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
public import Foundation
public import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// The App Store Server API calls Sluice makes, per environment and app (bundle id).
///
/// Answers are returned as Apple signed them; the caller verifies every signed payload with the
/// webhook verifier before anything is stored.
public struct AppStoreServerAPI: Sendable {
    /// One page of Get Notification History.
    public struct HistoryPage: Decodable, Sendable {
        public struct Item: Decodable, Sendable {
            public var signedPayload: String?
        }

        public var notificationHistory: [Item]?
        public var hasMore: Bool?
        public var paginationToken: String?
    }

    /// Get All Subscription Statuses: each subscription group's latest transaction and renewal info.
    public struct StatusResponse: Decodable, Sendable {
        public struct Group: Decodable, Sendable {
            public var subscriptionGroupIdentifier: String?
            public var lastTransactions: [LastTransaction]?
        }

        public struct LastTransaction: Decodable, Sendable {
            /// 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked.
            public var status: Int?
            public var originalTransactionId: String?
            public var signedTransactionInfo: String?
            public var signedRenewalInfo: String?
        }

        public var environment: String?
        public var bundleId: String?
        public var data: [Group]?
    }

    /// One page of Get Transaction History (v2).
    public struct TransactionHistoryPage: Decodable, Sendable {
        public var revision: String?
        public var bundleId: String?
        public var environment: String?
        public var hasMore: Bool?
        public var signedTransactions: [String]?
    }

    let call: ProviderCall
    let token: AppleAPIToken
    let baseURLs: [PurchaseEnvironment: String]

    public init(call: ProviderCall, token: AppleAPIToken, baseURLs: [PurchaseEnvironment: String]) {
        self.call = call
        self.token = token
        self.baseURLs = baseURLs
    }

    /// `GET /inApps/v2/history/{transactionId}[?sort=DESCENDING][&revision=…]`: a page of the
    /// customer's transactions (every in-app purchase the transaction's customer made in the app),
    /// by the date each was last changed, oldest first unless `newestFirst`; `nil` when Apple knows
    /// no such transaction in this environment (`404`).
    public func transactionHistory(
        transactionID: String, bundleID: String, environment: PurchaseEnvironment, revision: String?, newestFirst: Bool = false, logger: Logger
    ) async throws -> TransactionHistoryPage? {
        let id = transactionID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        var query: [String] = newestFirst ? ["sort=DESCENDING"] : []
        if let revision { query.append("revision=" + (revision.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")) }
        let path = "/inApps/v2/history/\(id)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        let answer = try await call.send(try request(path, bundleID: bundleID, environment: environment), logger: logger)
        if answer.status == 404 { return nil }
        return try decode(TransactionHistoryPage.self, answer, what: "transaction history")
    }

    /// `POST /inApps/v1/notifications/history[?paginationToken=…]` with `startDate`/`endDate` in
    /// milliseconds and, when asked, `onlyFailures`.
    public func notificationHistory(
        bundleID: String, environment: PurchaseEnvironment, from start: Date, to end: Date, onlyFailures: Bool,
        paginationToken: String?, logger: Logger
    ) async throws -> HistoryPage {
        var path = "/inApps/v1/notifications/history"
        if let paginationToken {
            path += "?paginationToken=" + (paginationToken.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        }
        var body: [String: any Sendable] = [
            "startDate": Int64(start.timeIntervalSince1970 * 1000), "endDate": Int64(end.timeIntervalSince1970 * 1000),
        ]
        if onlyFailures { body["onlyFailures"] = true }
        var request = try request(path, bundleID: bundleID, environment: environment)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])))
        return try await decode(HistoryPage.self, call.send(request, logger: logger), what: "notification history")
    }

    /// `GET /inApps/v1/subscriptions/{transactionId}`; `nil` when Apple knows no such transaction
    /// for this app (`404`).
    public func subscriptionStatuses(
        transactionID: String, bundleID: String, environment: PurchaseEnvironment, logger: Logger
    ) async throws -> StatusResponse? {
        let id = transactionID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let answer = try await call.send(try request("/inApps/v1/subscriptions/\(id)", bundleID: bundleID, environment: environment), logger: logger)
        if answer.status == 404 { return nil }
        return try decode(StatusResponse.self, answer, what: "subscription statuses")
    }

    /// `PUT /inApps/v2/transactions/consumption/{transactionId}` with a `ConsumptionRequest` body
    /// (Send Consumption Information): Apple answers `202` when it took it.
    /// - Returns: Apple's status, and its error message when it refused.
    public func sendConsumptionInformation(
        transactionID: String, body: Data, bundleID: String, environment: PurchaseEnvironment, logger: Logger
    ) async throws -> (status: Int, error: String?) {
        let id = transactionID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        var request = try request("/inApps/v2/transactions/consumption/\(id)", bundleID: bundleID, environment: environment)
        request.method = .PUT
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(data: body))
        let answer = try await call.send(request, logger: logger)
        return (answer.status, (200..<300).contains(answer.status) ? nil : Self.errorMessage(answer.body))
    }

    private func request(_ path: String, bundleID: String, environment: PurchaseEnvironment) throws -> HTTPClientRequest {
        guard let base = baseURLs[environment] else {
            throw ProviderAPIError(provider: "App Store Server", status: nil, message: "no base URL for \(environment.rawValue)")
        }
        var request = HTTPClientRequest(url: base + path)
        request.headers.add(name: "Authorization", value: "Bearer " + (try token.token(bundleID: bundleID)))
        request.headers.add(name: "Accept", value: "application/json")
        return request
    }

    private func decode<T: Decodable>(_ type: T.Type, _ answer: (status: Int, body: ByteBuffer), what: String) throws -> T {
        guard (200..<300).contains(answer.status) else {
            throw ProviderAPIError(provider: "App Store Server", status: answer.status, message: Self.errorMessage(answer.body))
        }
        do {
            return try JSONDecoder().decode(T.self, from: answer.body)
        } catch {
            throw ProviderAPIError(provider: "App Store Server", status: answer.status, message: "the \(what) answer is not the documented JSON")
        }
    }

    /// Apple's `{"errorCode": …, "errorMessage": "…"}`, shortened; never the request's token.
    static func errorMessage(_ body: ByteBuffer) -> String {
        struct AppleError: Decodable { var errorCode: Int?; var errorMessage: String? }
        guard let error = try? JSONDecoder().decode(AppleError.self, from: body) else { return "an error without Apple's error body" }
        return "\(error.errorCode.map(String.init) ?? "?") \(error.errorMessage?.prefix(200) ?? "")"
    }
}
