// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Shared

/// The Stripe API calls Sluice makes, with a restricted key and a pinned `Stripe-Version`.
///
/// Objects are returned as raw JSON: events are stored as they came, so the handlers read every
/// shape exactly as they read a webhook's.
struct StripeAPI: Sendable {
    /// One page of `GET /v1/events`: each event's JSON, newest first.
    struct EventPage: Sendable {
        var events: [Data]
        var hasMore: Bool
        /// The id of the last (oldest) event: `starting_after` of the next page.
        var lastID: String?
    }

    let call: ProviderCall
    let apiKey: String
    let apiVersion: String?
    let baseURL: String

    /// `GET /v1/events?limit=100&created[gte]=…[&starting_after=…]`, of a connected account with `Stripe-Account`.
    func events(createdSince since: Date, account: String?, startingAfter: String?, logger: Logger) async throws -> EventPage {
        var query = "limit=100&created%5Bgte%5D=\(Int64(since.timeIntervalSince1970))"
        if let startingAfter { query += "&starting_after=" + Self.escape(startingAfter) }
        let object = try await get("/v1/events?" + query, account: account, logger: logger)
        guard let data = object["data"] as? [[String: Any]] else {
            throw ProviderAPIError(provider: "Stripe", status: 200, message: "the events answer has no data list")
        }
        let events = try data.map { try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys, .withoutEscapingSlashes]) }
        return EventPage(events: events, hasMore: object["has_more"] as? Bool ?? false, lastID: data.last?["id"] as? String)
    }

    /// `GET /v1/subscriptions/{id}` (of a connected account with `Stripe-Account`); `nil` when Stripe
    /// knows none (`404`).
    func subscription(_ id: String, account: String?, logger: Logger) async throws -> [String: Any]? {
        do {
            return try await get("/v1/subscriptions/" + Self.escape(id), account: account, logger: logger)
        } catch let error as ProviderAPIError where error.status == 404 {
            return nil
        }
    }

    private func get(_ path: String, account: String?, logger: Logger) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: baseURL + path)
        request.headers.add(name: "Authorization", value: "Bearer " + apiKey)
        if let apiVersion { request.headers.add(name: "Stripe-Version", value: apiVersion) }
        if let account { request.headers.add(name: "Stripe-Account", value: account) }
        let answer = try await call.send(request, logger: logger)
        let object = try? JSONSerialization.jsonObject(with: Data(buffer: answer.body)) as? [String: Any]
        guard (200..<300).contains(answer.status), let object else {
            let message = ((object?["error"] as? [String: Any])?["message"] as? String).map { String($0.prefix(200)) }
            throw ProviderAPIError(provider: "Stripe", status: answer.status, message: message ?? "an answer that is not the documented JSON")
        }
        return object
    }

    static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "_-"))) ?? ""
    }
}
