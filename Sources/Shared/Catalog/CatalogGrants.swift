// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import Logging
public import PostgresNIO
import Synchronization

/// The access levels each product id grants (``AccessLevels/grants(of:)``), read from the catalog
/// at most every ``lifetime``: what the worker's outgoing events say an entitlement gives, without
/// a catalog query per applied event. A catalog change shows in events within ``lifetime``; the
/// read API reads the catalog with each request.
public final class CatalogGrants: Sendable {
    private let client: PostgresClient
    private let logger: Logger
    public let lifetime: TimeInterval
    private let kept = Mutex<(catalog: Catalog, readAt: Date?)>((Catalog(), nil))

    /// What the worker reads from the catalog.
    public struct Catalog: Sendable {
        /// The access levels each product id grants.
        public var grants: [String: Set<String>] = [:]
        /// The products by every id a purchase may carry (their currency grants).
        public var products: [String: CatalogProduct] = [:]

        public init(grants: [String: Set<String>] = [:], products: [String: CatalogProduct] = [:]) {
            self.grants = grants
            self.products = products
        }
    }

    public init(client: PostgresClient, lifetime: TimeInterval = 30, logger: Logger) {
        self.client = client
        self.lifetime = lifetime
        self.logger = logger
    }

    /// The access levels, read again when older than ``lifetime``.
    public func current(now: Date = Date()) async -> [String: Set<String>] {
        await catalog(now: now).grants
    }

    /// The catalog, read again when older than ``lifetime``; the one read before (or none) when
    /// the catalog cannot be read now.
    public func catalog(now: Date = Date()) async -> Catalog {
        let (catalog, readAt) = kept.withLock { ($0.catalog, $0.readAt) }
        if let readAt, now.timeIntervalSince(readAt) < lifetime { return catalog }
        do {
            let products = try await CatalogStore(client: client, logger: logger).all()
            let fresh = Catalog(grants: AccessLevels.grants(of: products), products: AccessLevels.products(of: products))
            kept.withLock { $0 = (fresh, now) }
            return fresh
        } catch {
            logger.warning("the catalog could not be read; events keep the access levels read before", metadata: ["error": "\(String(reflecting: error))"])
            return catalog
        }
    }
}

extension AccessLevels {
    /// The access levels `productID` grants, sorted: an entitlement's `access_levels`.
    public static func of(_ productID: String, in grants: [String: Set<String>]) -> [String] {
        (grants[productID] ?? []).sorted()
    }
}
