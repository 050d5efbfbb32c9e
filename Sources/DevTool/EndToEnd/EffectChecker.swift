// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// Reads an event's effect back through the read API: its user's transactions, entitlements and,
/// when the catalog grants currency, balances.
struct EffectChecker: Sendable {
    enum Effect: Sendable, Equatable {
        /// No transaction yet.
        case pending
        /// One transaction and an active entitlement for the product.
        case applied
        /// More than one transaction for an event that should make one.
        case duplicated(transactions: Int)
        /// One transaction but no active entitlement, or a balance other than one grant: applied wrongly.
        case inconsistent(String)
    }

    let client: HTTPClient
    let baseURL: String
    let apiKey: String
    /// What the catalog grants each purchase of the run (`credits=100`): its buyer must hold exactly
    /// that, granted once in the transaction that applied the purchase. `nil`: balances unchecked.
    var grant: (currency: String, amount: Int64)?

    func effect(of event: PlannedEvent) async throws -> Effect {
        struct History: Decodable { let transactions: [Transaction] }
        struct Transaction: Decodable { let product_id: String }
        struct Entitlements: Decodable { let entitlements: [Entitlement] }
        struct Entitlement: Decodable { let product_id: String; let is_active: Bool }

        let user = event.user.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? event.user
        let history: History = try await get("/v1/iap/transaction-history?user_id=\(user)")
        switch history.transactions.count {
        case 0: return .pending
        case 1: break
        default: return .duplicated(transactions: history.transactions.count)
        }
        let entitlements: Entitlements = try await get("/v1/iap/entitlements?user_id=\(user)")
        guard entitlements.entitlements.contains(where: { $0.product_id == event.productID && $0.is_active }) else {
            return .inconsistent("no active \(event.productID) entitlement for \(event.user)")
        }
        if let grant {
            struct Balances: Decodable { let balances: [String: Int64] }
            let held = (try await get("/v1/iap/users/\(user)/balances") as Balances).balances[grant.currency] ?? 0
            guard held == grant.amount else {
                return .inconsistent("\(event.user) holds \(held) \(grant.currency) where the purchase grants \(grant.amount)")
            }
        }
        return .applied
    }

    /// A read, waiting out `429`s as their `Retry-After` says (the API's rate limit), up to ten times.
    private func get<Answer: Decodable>(_ path: String) async throws -> Answer {
        var request = HTTPClientRequest(url: baseURL + path)
        request.headers.add(name: "X-Sluice-Key", value: apiKey)
        var response = try await client.execute(request, timeout: .seconds(10))
        var waits = 0
        while response.status == .tooManyRequests, waits < 10 {
            _ = try await response.body.collect(upTo: 1 << 20)
            waits += 1
            try await Task.sleep(for: .seconds(Int(response.headers.first(name: "Retry-After") ?? "") ?? 1))
            response = try await client.execute(request, timeout: .seconds(10))
        }
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else {
            throw ReadAPIError(message: "GET \(path) answered \(response.status.code): \(String(buffer: body))")
        }
        return try JSONDecoder().decode(Answer.self, from: Data(buffer: body))
    }
}

struct ReadAPIError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
