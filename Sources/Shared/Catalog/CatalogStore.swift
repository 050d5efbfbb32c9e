// SPDX-License-Identifier: Apache-2.0
import Foundation
public import Logging
public import PostgresNIO

/// Reads and changes `catalog_products`: what `worker products …` does and what the read API's
/// access answer reads. Every statement binds its values.
public struct CatalogStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Why a change was refused.
    public struct Refusal: Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    /// What `update` sets; `nil` leaves a value as it is (`.some(nil)` clears an optional one).
    public struct Changes: Sendable {
        public var type: ProductType?
        public var stripePrice: String??
        public var appleProductIDs: [String]?
        public var playProductIDs: [String]?
        public var trialDays: Int??
        public var accessLevels: [String]?
        public var currencyGrants: [String: Int64]?
        public var trialCurrencyGrants: [String: Int64]??
        public var currencyGrantsExpire: Bool?

        public init(
            type: ProductType? = nil, stripePrice: String?? = nil, appleProductIDs: [String]? = nil, playProductIDs: [String]? = nil,
            trialDays: Int?? = nil,
            accessLevels: [String]? = nil, currencyGrants: [String: Int64]? = nil, trialCurrencyGrants: [String: Int64]?? = nil,
            currencyGrantsExpire: Bool? = nil
        ) {
            self.currencyGrants = currencyGrants
            self.currencyGrantsExpire = currencyGrantsExpire
            self.trialCurrencyGrants = trialCurrencyGrants
            self.type = type
            self.stripePrice = stripePrice
            self.appleProductIDs = appleProductIDs
            self.playProductIDs = playProductIDs
            self.trialDays = trialDays
            self.accessLevels = accessLevels
        }
    }

    static let columns =
        """
        id, type, stripe_price, apple_product_ids, play_product_ids, trial_days, access_levels, archived_at, currency_grants::text,
        trial_currency_grants::text, currency_grants_expire
        """

    /// Every product, archived ones too unless `soldOnly` (oldest first).
    public func all(soldOnly: Bool = false) async throws -> [CatalogProduct] {
        try await Self.decode(client.query(
            """
            SELECT \(unescaped: Self.columns) FROM catalog_products
            WHERE NOT \(soldOnly) OR archived_at IS NULL ORDER BY created_at, id
            """, logger: logger))
    }

    public func product(_ id: String) async throws -> CatalogProduct? {
        try await Self.decode(client.query("SELECT \(unescaped: Self.columns) FROM catalog_products WHERE id = \(id)", logger: logger)).first
    }

    /// - Throws: ``Refusal`` when the id is taken, or a store product id is another product's.
    public func add(_ product: CatalogProduct) async throws -> CatalogProduct {
        try await client.withTransaction(logger: logger) { connection -> Result<CatalogProduct, Refusal> in
            try await connection.query("LOCK TABLE catalog_products IN SHARE ROW EXCLUSIVE MODE", logger: logger)
            if let taken = try await Self.storeIDsTaken(product.storeProductIDs, except: product.id, on: connection, logger: logger) {
                return .failure(taken)
            }
            let rows = try await connection.query(
                """
                INSERT INTO catalog_products (id, type, stripe_price, apple_product_ids, play_product_ids, trial_days, access_levels,
                    currency_grants, trial_currency_grants, currency_grants_expire)
                VALUES (\(product.id), \(product.type.rawValue), \(product.stripePrice), \(product.appleProductIDs), \(product.playProductIDs),
                    \(product.trialDays),
                    \(product.accessLevels), \(try Self.json(product.currencyGrants))::jsonb, \(try product.trialCurrencyGrants.map(Self.json))::jsonb,
                    \(product.currencyGrantsExpire))
                ON CONFLICT (id) DO NOTHING RETURNING \(unescaped: Self.columns)
                """, logger: logger)
            guard let added = try await Self.decode(rows).first else {
                return .failure(Refusal(description: "a product \(product.id) exists already (worker products update changes it)"))
            }
            return .success(added)
        }.get()
    }

    /// - Returns: the product as changed, or `nil` when there is none with `id`.
    public func update(_ id: String, _ changes: Changes) async throws -> CatalogProduct? {
        try await client.withTransaction(logger: logger) { connection -> Result<CatalogProduct?, Refusal> in
            try await connection.query("LOCK TABLE catalog_products IN SHARE ROW EXCLUSIVE MODE", logger: logger)
            let storeIDs = (changes.appleProductIDs ?? []) + (changes.playProductIDs ?? [])
            if let taken = try await Self.storeIDsTaken(storeIDs, except: id, on: connection, logger: logger) {
                return .failure(taken)
            }
            let rows = try await connection.query(
                """
                UPDATE catalog_products SET
                    type = COALESCE(\(changes.type?.rawValue)::text, type),
                    stripe_price = CASE WHEN \(changes.stripePrice != nil) THEN \(changes.stripePrice ?? nil)::text ELSE stripe_price END,
                    apple_product_ids = COALESCE(\(changes.appleProductIDs)::text[], apple_product_ids),
                    play_product_ids = COALESCE(\(changes.playProductIDs)::text[], play_product_ids),
                    trial_days = CASE WHEN \(changes.trialDays != nil) THEN \(changes.trialDays ?? nil)::integer ELSE trial_days END,
                    access_levels = COALESCE(\(changes.accessLevels)::text[], access_levels),
                    currency_grants = COALESCE(\(try changes.currencyGrants.map(Self.json))::jsonb, currency_grants),
                    trial_currency_grants = CASE WHEN \(changes.trialCurrencyGrants != nil)
                        THEN \(try (changes.trialCurrencyGrants ?? nil).map(Self.json))::jsonb ELSE trial_currency_grants END,
                    currency_grants_expire = COALESCE(\(changes.currencyGrantsExpire)::boolean, currency_grants_expire),
                    updated_at = now()
                WHERE id = \(id) RETURNING \(unescaped: Self.columns)
                """, logger: logger)
            return .success(try await Self.decode(rows).first)
        }.get()
    }

    /// Stops selling it; what was bought keeps its access levels. `nil` when there is none.
    public func archive(_ id: String) async throws -> CatalogProduct? {
        try await Self.decode(client.query(
            """
            UPDATE catalog_products SET archived_at = COALESCE(archived_at, now()), updated_at = now()
            WHERE id = \(id) RETURNING \(unescaped: Self.columns)
            """, logger: logger)).first
    }

    /// One App Store or Google Play product id is one catalog product: a refusal naming an id
    /// another product has, on either store.
    private static func storeIDsTaken(_ ids: [String], except id: String, on connection: PostgresConnection, logger: Logger) async throws -> Refusal? {
        guard !ids.isEmpty else { return nil }
        for try await (other, storeID) in try await connection.query(
            """
            SELECT id, s FROM catalog_products, unnest(apple_product_ids || play_product_ids) AS s
            WHERE id <> \(id) AND s = ANY(\(ids)) ORDER BY id, s LIMIT 1
            """, logger: logger
        ).decode((String, String).self) {
            return Refusal(description: "store product \(storeID) is product \(other)'s already")
        }
        return nil
    }

    private static func decode(_ rows: PostgresRowSequence) async throws -> [CatalogProduct] {
        var products: [CatalogProduct] = []
        for try await (id, type, price, apple, play, trial, levels, archived, grants, trialGrants, grantsExpire) in rows.decode(
            (String, String, String?, [String], [String], Int32?, [String], Date?, String, String?, Bool).self)
        {
            let decoder = JSONDecoder()
            products.append(CatalogProduct(
                id: id, type: ProductType(rawValue: type) ?? .nonConsumable, stripePrice: price, appleProductIDs: apple, playProductIDs: play,
                trialDays: trial.map(Int.init), accessLevels: levels, archivedAt: archived,
                currencyGrants: try decoder.decode([String: Int64].self, from: Data(grants.utf8)),
                trialCurrencyGrants: try trialGrants.map { try decoder.decode([String: Int64].self, from: Data($0.utf8)) },
                currencyGrantsExpire: grantsExpire))
        }
        return products
    }

    private static func json(_ amounts: [String: Int64]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(amounts), as: UTF8.self)
    }
}
