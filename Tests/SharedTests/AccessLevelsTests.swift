// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

/// Which access levels a user has, from entitlements on either store through the catalog, as a table.
struct AccessLevelsTests {
    static let catalog = [
        CatalogProduct(id: "pro.monthly", type: .autoRenewable, appleProductIDs: ["com.example.pro.monthly"], accessLevels: ["pro"]),
        CatalogProduct(id: "pro.yearly", type: .autoRenewable, appleProductIDs: ["com.example.pro.yearly"], accessLevels: ["ad_free", "pro"]),
        CatalogProduct(id: "lifetime", type: .nonConsumable, accessLevels: ["pro"], archivedAt: Date(timeIntervalSince1970: 1)),
        CatalogProduct(id: "coins", type: .consumable),
    ]
    static let (a, b, c) = (UUID(), UUID(), UUID())
    static func day(_ n: Double) -> Date { Date(timeIntervalSince1970: 1_800_000_000 + n * 86_400) }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var holdings: [AccessLevels.Holding]
        var expected: [AccessLevels.Level]
        var testDescription: String { name }
    }

    @Test(arguments: [
        Case(name: "nothing bought", holdings: [], expected: []),
        Case(name: "a product not in the catalog grants nothing", holdings: [.init(id: a, productID: "other", isActive: true, expiresAt: nil)], expected: []),
        Case(name: "a product with no level grants nothing", holdings: [.init(id: a, productID: "coins", isActive: true, expiresAt: nil)], expected: []),
        Case(
            name: "web monthly and App Store yearly: one pro, the later expiry",
            holdings: [
                .init(id: a, productID: "pro.monthly", isActive: true, expiresAt: day(30)),
                .init(id: b, productID: "com.example.pro.yearly", isActive: true, expiresAt: day(365)),
            ],
            expected: [
                .init(name: "ad_free", isActive: true, expiresAt: day(365), entitlementIDs: [b]),
                .init(name: "pro", isActive: true, expiresAt: day(365), entitlementIDs: [a, b]),
            ]),
        Case(
            name: "an expired one does not lengthen an active one, and comes after it",
            holdings: [
                .init(id: a, productID: "com.example.pro.monthly", isActive: false, expiresAt: day(400)),
                .init(id: b, productID: "pro.monthly", isActive: true, expiresAt: day(10)),
            ],
            expected: [.init(name: "pro", isActive: true, expiresAt: day(10), entitlementIDs: [b, a])]),
        Case(
            name: "an archived lifetime product still grants, without end",
            holdings: [
                .init(id: a, productID: "lifetime", isActive: true, expiresAt: nil),
                .init(id: b, productID: "pro.monthly", isActive: true, expiresAt: day(30)),
            ],
            expected: [.init(name: "pro", isActive: true, expiresAt: nil, entitlementIDs: [a, b])]),
        Case(
            name: "all ended: inactive, ended at the latest expiry",
            holdings: [
                .init(id: a, productID: "pro.monthly", isActive: false, expiresAt: day(-40)),
                .init(id: c, productID: "pro.monthly", isActive: false, expiresAt: day(-10)),
            ],
            expected: [.init(name: "pro", isActive: false, expiresAt: day(-10), entitlementIDs: [a, c])]),
    ])
    func levels(_ example: Case) {
        #expect(AccessLevels.levels(of: example.holdings, grants: AccessLevels.grants(of: Self.catalog)) == example.expected)
    }

    @Test(arguments: [("pro", true), ("ad_free", true), ("tier-2.gold", true), ("", false), ("Pro", false), ("with space", false),
                      (String(repeating: "a", count: 64), true), (String(repeating: "a", count: 65), false)])
    func accessLevelNames(name: String, valid: Bool) {
        #expect(CatalogProduct.isValidAccessLevel(name) == valid)
    }
}
