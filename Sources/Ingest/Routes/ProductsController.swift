// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Logging
import Shared

/// `GET /v1/iap/products` (client or server key): what a paywall shows — each product on sale in
/// the catalog with its type, access levels, trial, App Store ids and, with `STRIPE_CHECKOUT_KEY`,
/// its Stripe price as Stripe has it (kept for five minutes, ``PriceCache``).
///
/// A price Stripe cannot give now is the one kept from before, or `null`: the list never fails
/// because Stripe does.
struct ProductsController<Context: RemoteAddressRequestContext>: Sendable {
    let catalog: CatalogStore
    let prices: PriceCache?
    let apiKeys: APIKeyCheck
    var database = DatabaseCalls(limit: .seconds(5))
    /// How long one price may take before the kept one (or none) is shown.
    var priceTimeout = Duration.seconds(2)

    static var path: RouterPath { "/v1/iap/products" }

    func addRoutes(to router: Router<Context>) {
        router.get(Self.path, use: list)
    }

    struct PriceBody: Encodable {
        var id: String
        /// In the currency's minor units.
        var amount: Int64?
        var currency: String
        var interval: String?
        var interval_count: Int?
    }

    /// A product as the catalog writes it (``CatalogProduct``), with its Stripe price.
    struct ProductBody: Encodable {
        var product: CatalogProduct
        var price: PriceBody?

        func encode(to encoder: any Encoder) throws {
            try product.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            // null, not left out: the paywall reads every key.
            try container.encode(price, forKey: .price)
        }

        enum CodingKeys: String, CodingKey { case price }
    }

    struct ProductList: Encodable {
        var products: [ProductBody]
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        try apiKeys.requireAny(request, from: context.remoteAddress)
        let catalog = self.catalog
        let products = try await database.run { try await catalog.all(soldOnly: true) }
        var bodies: [ProductBody] = []
        for product in products {
            let price = await product.stripePrice.asyncFlatMap { await self.price($0, logger: context.logger) }
            bodies.append(ProductBody(
                product: product,
                price: price.map { PriceBody(id: $0.id, amount: $0.unitAmount, currency: $0.currency, interval: $0.interval, interval_count: $0.intervalCount) }))
        }
        return try ReadController<Context>.json(ProductList(products: bodies))
    }

    private func price(_ reference: String, logger: Logger) async -> StripePrice? {
        guard let prices else { return nil }
        do {
            return try await withTimeout(priceTimeout) { try await prices.price(reference, logger: logger) }
        } catch {
            logger.notice("a Stripe price could not be read; the kept one is shown", metadata: ["price": "\(reference)", "error": "\(error)"])
            return prices.kept(reference)
        }
    }
}

extension Optional {
    /// `map` with an async transform.
    func asyncFlatMap<Mapped>(_ transform: (Wrapped) async -> Mapped?) async -> Mapped? {
        guard let self else { return nil }
        return await transform(self)
    }
}
