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
    /// The Google Play product ids (`productId`) that are this same product.
    public var playProductIDs: [String]
    /// The free trial of a web subscription, in days.
    public var trialDays: Int?
    public var accessLevels: [String]
    /// When it stopped being sold; what was bought keeps its access levels.
    public var archivedAt: Date?
    /// What a purchase grants, and a subscription's every paid period: `{"credits": 500}`
    /// (docs/credits.md). Empty: no currency.
    public var currencyGrants: [String: Int64]
    /// What a subscription's free trial grants instead; `nil`: the same as a paid period.
    public var trialCurrencyGrants: [String: Int64]?
    /// Whether what a subscription's period grants expires at the end of that period (what is not
    /// spent by then is taken, cause `expiry`); a one-time purchase's grant never expires.
    public var currencyGrantsExpire: Bool

    public init(
        id: String, type: ProductType, stripePrice: String? = nil, appleProductIDs: [String] = [], playProductIDs: [String] = [],
        trialDays: Int? = nil,
        accessLevels: [String] = [], archivedAt: Date? = nil, currencyGrants: [String: Int64] = [:], trialCurrencyGrants: [String: Int64]? = nil,
        currencyGrantsExpire: Bool = false
    ) {
        self.currencyGrants = currencyGrants
        self.currencyGrantsExpire = currencyGrantsExpire
        self.trialCurrencyGrants = trialCurrencyGrants
        self.id = id
        self.type = type
        self.stripePrice = stripePrice
        self.appleProductIDs = appleProductIDs
        self.playProductIDs = playProductIDs
        self.trialDays = trialDays
        self.accessLevels = accessLevels
        self.archivedAt = archivedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, type, stripePrice = "stripe_price", appleProductIDs = "apple_product_ids", playProductIDs = "play_product_ids"
        case trialDays = "trial_days"
        case accessLevels = "access_levels", archivedAt = "archived_at"
        case currencyGrants = "currency_grants", trialCurrencyGrants = "trial_currency_grants", currencyGrantsExpire = "currency_grants_expire"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try container.decode(String.self, forKey: .id), type: try container.decode(ProductType.self, forKey: .type),
            stripePrice: try container.decodeIfPresent(String.self, forKey: .stripePrice),
            appleProductIDs: try container.decodeIfPresent([String].self, forKey: .appleProductIDs) ?? [],
            playProductIDs: try container.decodeIfPresent([String].self, forKey: .playProductIDs) ?? [],
            trialDays: try container.decodeIfPresent(Int.self, forKey: .trialDays),
            accessLevels: try container.decodeIfPresent([String].self, forKey: .accessLevels) ?? [],
            archivedAt: try container.decodeIfPresent(Date.self, forKey: .archivedAt),
            currencyGrants: try container.decodeIfPresent([String: Int64].self, forKey: .currencyGrants) ?? [:],
            trialCurrencyGrants: try container.decodeIfPresent([String: Int64].self, forKey: .trialCurrencyGrants),
            currencyGrantsExpire: try container.decodeIfPresent(Bool.self, forKey: .currencyGrantsExpire) ?? false)
    }

    /// Every field, `null` where there is none (never left out).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(type, forKey: .type)
        try container.encode(stripePrice, forKey: .stripePrice)
        try container.encode(appleProductIDs, forKey: .appleProductIDs)
        try container.encode(playProductIDs, forKey: .playProductIDs)
        try container.encode(trialDays, forKey: .trialDays)
        try container.encode(accessLevels, forKey: .accessLevels)
        try container.encode(archivedAt, forKey: .archivedAt)
        try container.encode(currencyGrants, forKey: .currencyGrants)
        try container.encode(trialCurrencyGrants, forKey: .trialCurrencyGrants)
        try container.encode(currencyGrantsExpire, forKey: .currencyGrantsExpire)
    }

    /// The ids a purchase of it may carry: its own, then its App Store and Google Play product ids.
    public var allProductIDs: [String] { [id] + appleProductIDs + playProductIDs }

    /// Its store product ids, which no other product may have.
    var storeProductIDs: [String] { appleProductIDs + playProductIDs }

    /// What one purchase or paid period grants (a free trial's own amounts when `trial`), `nil`
    /// for nothing.
    public func currencies(trial: Bool) -> [String: Int64]? {
        let amounts = trial ? (trialCurrencyGrants ?? currencyGrants) : currencyGrants
        return amounts.isEmpty ? nil : amounts
    }

    /// An access level's name: 1 to 64 of `a-z`, `0-9`, `_`, `-`, `.` (what apps compare against).
    public static func isValidAccessLevel(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || [UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: ".")].contains(byte)
        }
    }
}
