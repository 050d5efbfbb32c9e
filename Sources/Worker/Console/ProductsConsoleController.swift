// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Shared

/// `/products`: the catalog, archived products too, as `worker products list` shows it (read only:
/// products are changed with the CLI).
struct ProductsConsoleController: Sendable {
    let services: ConsoleServices
    let renderer: ConsoleRenderer

    func register(on router: Router<ConsoleRequestContext>) {
        router.get("/products") { request, context in
            let products = try await CatalogStore(client: services.client, logger: context.logger).all()
            return renderer.page(
                "products", title: "Products", section: .products, request: request, context: context,
                values: ["products": products.map(Self.row), "hasProducts": !products.isEmpty])
        }
    }

    static func row(_ product: CatalogProduct) -> [String: Any] {
        [
            "id": product.id, "type": product.type.rawValue,
            "accessLevels": product.accessLevels.isEmpty ? "—" : product.accessLevels.joined(separator: ", "),
            "stripePrice": product.stripePrice ?? "—",
            "appleProductIDs": product.appleProductIDs.isEmpty ? "—" : product.appleProductIDs.joined(separator: ", "),
            "trialDays": product.trialDays.map(String.init) ?? "—",
            "state": product.archivedAt == nil ? "on sale" : "archived", "stateClass": product.archivedAt == nil ? "good" : "",
        ]
    }
}
