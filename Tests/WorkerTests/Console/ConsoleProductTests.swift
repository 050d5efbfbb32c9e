// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Shared
import Testing
import TestSupport

@testable import Worker

/// The products page shows the catalog as `worker products list` does, archived products marked.
@Suite(.timeLimit(.minutes(3)))
struct ConsoleProductTests {
    @Test func theCatalogIsShownWithItsAccessLevelsAndWhatIsArchived() async throws {
        try await SystemHarness.run { system in
            let catalog = CatalogStore(client: system.db.client, logger: TestDatabase.logger)
            _ = try await catalog.add(CatalogProduct(
                id: "pro.monthly", type: .autoRenewable, stripePrice: "price_m", appleProductIDs: ["com.example.pro.monthly"], trialDays: 7,
                accessLevels: ["ad_free", "pro"]))
            _ = try await catalog.add(CatalogProduct(id: "old.lifetime", type: .nonConsumable, accessLevels: ["pro"]))
            _ = try await catalog.archive("old.lifetime")
            try await ConsoleHarness.run(system) { signedOut in
                let console = try await signedOut.signedIn()
                let page = try await console.page("/products")
                #expect(page.contains("<code>pro.monthly</code>") && page.contains("ad_free, pro") && page.contains("com.example.pro.monthly"))
                #expect(page.contains("<code>price_m</code>") && page.contains("on sale"))
                #expect(page.contains("<code>old.lifetime</code>") && page.contains("archived"))
                #expect(page.contains("href=\"/products\""), "in the navigation")
            }
        }
    }

    /// A page whose template is not registered answers `500` with a sentence, never an empty
    /// `200`; the other pages are drawn as ever.
    @Test func aMissingTemplateIsAServerErrorNotAnEmptyPage() async throws {
        try await SystemHarness.run { system in
            try await ConsoleHarness.run(system, templates: ConsoleTemplate.allCases.filter { $0 != .products }) { signedOut in
                let console = try await signedOut.signedIn()
                let response = try await console.get("/products")
                #expect(response.status == .internalServerError)
                #expect(String(buffer: response.body).contains("its template products is missing"))
                #expect(try await console.page("/").contains("id=\"queue-events\""), "the overview is drawn")
            }
        }
    }
}
