// SPDX-License-Identifier: Apache-2.0
import Shared

/// `/products`: the catalog, archived products too, as `worker products list` shows it.
struct ProductListPage: ConsolePage {
    static let template = ConsoleTemplate.products

    struct Row: Sendable {
        var id: String
        var type: String
        var accessLevels: String
        var stripePrice: String
        var appleProductIDs: String
        var trialDays: String
        var state: String
        var stateClass: String
    }

    var products: [Row]
    var hasProducts: Bool

    init(_ catalog: [CatalogProduct]) {
        products = catalog.map { product in
            Row(
                id: product.id, type: product.type.rawValue,
                accessLevels: product.accessLevels.isEmpty ? "—" : product.accessLevels.joined(separator: ", "),
                stripePrice: product.stripePrice ?? "—",
                appleProductIDs: product.appleProductIDs.isEmpty ? "—" : product.appleProductIDs.joined(separator: ", "),
                trialDays: product.trialDays.map(String.init) ?? "—", state: product.archivedAt == nil ? "on sale" : "archived",
                stateClass: product.archivedAt == nil ? "good" : "")
        }
        hasProducts = !products.isEmpty
    }
}
