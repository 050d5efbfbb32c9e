// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// A product of the catalog (`catalog_products`): one thing the app sells, on the web through
/// Stripe and in the App Store, and the access levels it grants (`pro`, `ad_free`, …).
public struct CatalogProduct: Sendable, Equatable, Codable {
    /// The id the app and the read API use; a Stripe purchase names it in `metadata.product_id`.
    public var id: String
    public var type: ProductType
    /// A Stripe price id (`price_…`) or lookup key.
    public var stripePrice: String?
    /// The App Store product ids that are this same product.
    public var appleProductIDs: [String]
    /// The free trial of a web subscription, in days.
    public var trialDays: Int?
    public var accessLevels: [String]
    /// When it stopped being sold; what was bought keeps its access levels.
    public var archivedAt: Date?

    public init(
        id: String, type: ProductType, stripePrice: String? = nil, appleProductIDs: [String] = [], trialDays: Int? = nil,
        accessLevels: [String] = [], archivedAt: Date? = nil
    ) {
        self.id = id
        self.type = type
        self.stripePrice = stripePrice
        self.appleProductIDs = appleProductIDs
        self.trialDays = trialDays
        self.accessLevels = accessLevels
        self.archivedAt = archivedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, type, stripePrice = "stripe_price", appleProductIDs = "apple_product_ids", trialDays = "trial_days"
        case accessLevels = "access_levels", archivedAt = "archived_at"
    }

    /// Every field, `null` where there is none (never left out).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(type, forKey: .type)
        try container.encode(stripePrice, forKey: .stripePrice)
        try container.encode(appleProductIDs, forKey: .appleProductIDs)
        try container.encode(trialDays, forKey: .trialDays)
        try container.encode(accessLevels, forKey: .accessLevels)
        try container.encode(archivedAt, forKey: .archivedAt)
    }

    /// An access level's name: 1 to 64 of `a-z`, `0-9`, `_`, `-`, `.` (what apps compare against).
    public static func isValidAccessLevel(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || [UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: ".")].contains(byte)
        }
    }
}
