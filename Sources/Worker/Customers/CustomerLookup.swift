// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO

/// Finds whose story an operator asks about, from whatever id they have at hand: a user id, an
/// email address, an Apple `originalTransactionId`, a Stripe customer, subscription, payment
/// intent or charge id, a Google Play purchase token, a ledger row's provider id (an Apple
/// `transactionId`, a Play order `GPA.…`), or an entity key as `applied_events` names it.
struct CustomerLookup: Sendable {
    let client: PostgresClient
    let logger: Logger

    /// Every subject the text names, users first; empty when it names nothing stored.
    func find(_ text: String) async throws -> [CustomerSubject] {
        let query = text.trimmingCharacters(in: .whitespaces)
        guard !query.isEmpty else { return [] }
        var users: [String] = []
        var entities: [String] = []
        let rows = try await client.query(
            """
            SELECT DISTINCT user_id, NULL::text FROM entitlements WHERE user_id = \(query) OR lower(email) = lower(\(query))
            UNION SELECT user_id, NULL FROM transactions WHERE user_id = \(query)
            UNION SELECT user_id, NULL FROM balances WHERE user_id = \(query)
            UNION SELECT user_id, CASE WHEN user_id IS NULL THEN entitlement_key END FROM provider_links WHERE external_id = \(query)
            UNION SELECT user_id, CASE WHEN user_id IS NULL THEN entitlement_key END FROM transactions
                WHERE provider_transaction_id = \(query) AND (user_id IS NOT NULL OR entitlement_key IS NOT NULL)
            UNION SELECT user_id, CASE WHEN user_id IS NULL THEN entity_key END FROM entitlements
                WHERE entity_key = \(query)
                    OR entity_key IN ('apple:' || \(query), 'apple:sandbox:' || \(query), 'play:' || \(query), 'play:sandbox:' || \(query))
            """, logger: logger)
        for try await (user, entity) in rows.decode((String?, String?).self) {
            if let user { users.append(user) } else if let entity { entities.append(entity) }
        }
        return Set(users).sorted().map(CustomerSubject.user) + Set(entities).sorted().map(CustomerSubject.entity)
    }
}

/// Whose story is told: a user with all their entitlements, or one purchase no user is linked to yet.
enum CustomerSubject: Sendable, Equatable, Hashable {
    case user(String)
    case entity(String)

    /// How operators name it, in URLs and on the command line: the user id, or `entity:` and the key.
    var reference: String {
        switch self {
        case .user(let id): id
        case .entity(let key): "entity:" + key
        }
    }

    init(reference: String) {
        self = reference.hasPrefix("entity:") ? .entity(String(reference.dropFirst("entity:".count))) : .user(reference)
    }
}
