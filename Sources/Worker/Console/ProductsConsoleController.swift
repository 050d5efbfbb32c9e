// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Shared

/// `/products`: the catalog, archived products too, as `worker products list` shows it (read only:
/// products are changed with the CLI).
struct ProductsConsoleController: Sendable {
    let services: ConsoleServices
    let renderer: ConsoleRenderer

    func addRoutes(to router: Router<ConsoleRequestContext>) {
        router.group("products").get(use: list)
    }

    @Sendable func list(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let products = try await CatalogStore(client: services.client, logger: context.logger).all()
        return renderer.page(ProductListPage(products), title: "Products", section: .products, request: request, context: context)
    }
}
