// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import Shared
import NIOHTTP1

/// The App Store Server API calls Sluice makes, per environment and app (bundle id).
///
/// Answers are returned as Apple signed them; the caller verifies every signed payload with the
/// webhook verifier before anything is stored.
struct AppStoreServerAPI: Sendable {
    /// One page of Get Notification History.
    struct HistoryPage: Decodable, Sendable {
        struct Item: Decodable, Sendable {
            var signedPayload: String?
        }

        var notificationHistory: [Item]?
        var hasMore: Bool?
        var paginationToken: String?
    }

    /// Get All Subscription Statuses: each subscription group's latest transaction and renewal info.
    struct StatusResponse: Decodable, Sendable {
        struct Group: Decodable, Sendable {
            var subscriptionGroupIdentifier: String?
            var lastTransactions: [LastTransaction]?
        }

        struct LastTransaction: Decodable, Sendable {
            /// 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked.
            var status: Int?
            var originalTransactionId: String?
            var signedTransactionInfo: String?
            var signedRenewalInfo: String?
        }

        var environment: String?
        var bundleId: String?
        var data: [Group]?
    }

    let call: ProviderCall
    let token: AppleAPIToken
    let baseURLs: [PurchaseEnvironment: String]

    /// `POST /inApps/v1/notifications/history[?paginationToken=…]` with `startDate`/`endDate` in
    /// milliseconds and, when asked, `onlyFailures`.
    func notificationHistory(
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
    func subscriptionStatuses(
        transactionID: String, bundleID: String, environment: PurchaseEnvironment, logger: Logger
    ) async throws -> StatusResponse? {
        let id = transactionID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let answer = try await call.send(try request("/inApps/v1/subscriptions/\(id)", bundleID: bundleID, environment: environment), logger: logger)
        if answer.status == 404 { return nil }
        return try decode(StatusResponse.self, answer, what: "subscription statuses")
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
