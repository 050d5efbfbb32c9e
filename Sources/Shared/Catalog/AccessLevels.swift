// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// Which access levels a user has, from every entitlement on either store (`GET /v1/iap/access`):
/// decided without I/O from the catalog and the user's entitlements as the read API shows them.
///
/// An entitlement grants the access levels of the catalog product it is — its product id is the
/// product's id (a Stripe purchase) or one of its App Store product ids. A level is active while
/// any entitlement granting it is; it lasts until the latest expiry among those (`nil`: one of
/// them never expires). Inactive levels are listed too, with the entitlements that gave them.
public enum AccessLevels {
    /// One access level of the user.
    public struct Level: Sendable, Equatable {
        public var name: String
        public var isActive: Bool
        /// While active: until when (`nil`: without end, a lifetime purchase). Inactive: when it ended, if known.
        public var expiresAt: Date?
        /// The entitlements that give (or gave) it, active ones first.
        public var entitlementIDs: [UUID]

        public init(name: String, isActive: Bool, expiresAt: Date?, entitlementIDs: [UUID]) {
            self.name = name
            self.isActive = isActive
            self.expiresAt = expiresAt
            self.entitlementIDs = entitlementIDs
        }
    }

    /// An entitlement as the decision needs it.
    public struct Holding: Sendable, Equatable {
        public var id: UUID
        public var productID: String
        public var isActive: Bool
        public var expiresAt: Date?

        public init(id: UUID, productID: String, isActive: Bool, expiresAt: Date?) {
            self.id = id
            self.productID = productID
            self.isActive = isActive
            self.expiresAt = expiresAt
        }
    }

    /// The access levels each product id grants: a catalog product's own id and each of its App
    /// Store ids, archived products too (what was bought keeps its levels).
    public static func grants(of catalog: [CatalogProduct]) -> [String: Set<String>] {
        var grants: [String: Set<String>] = [:]
        for product in catalog {
            for productID in product.allProductIDs {
                grants[productID, default: []].formUnion(product.accessLevels)
            }
        }
        return grants
    }

    /// The catalog's products by every id an entitlement or transaction may carry: the product's
    /// own and its App Store product ids (one App Store id belongs to one product).
    public static func products(of catalog: [CatalogProduct]) -> [String: CatalogProduct] {
        var products: [String: CatalogProduct] = [:]
        for product in catalog {
            for productID in product.allProductIDs { products[productID] = product }
        }
        return products
    }

    /// The user's access levels, by name.
    public static func levels(of holdings: [Holding], grants: [String: Set<String>]) -> [Level] {
        var byName: [String: [Holding]] = [:]
        for holding in holdings {
            for name in grants[holding.productID] ?? [] { byName[name, default: []].append(holding) }
        }
        return byName.keys.sorted().map { name in
            let holders = byName[name] ?? []
            let active = holders.filter(\.isActive)
            let considered = active.isEmpty ? holders : active
            // The latest expiry; a holder without one (a lifetime purchase) has none while active.
            let expiresAt: Date? = active.contains { $0.expiresAt == nil } ? nil : considered.compactMap(\.expiresAt).max()
            let ordered = active + holders.filter { !$0.isActive }
            return Level(name: name, isActive: !active.isEmpty, expiresAt: expiresAt, entitlementIDs: ordered.map(\.id))
        }
    }
}
