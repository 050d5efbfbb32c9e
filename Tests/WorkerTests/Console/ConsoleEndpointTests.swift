// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// The endpoints pages: health, deliveries, and each action, checked in the database.
@Suite(.timeLimit(.minutes(3)))
struct ConsoleEndpointTests {
    @Test func endpointsAreDisabledEnabledResentAndRotatedFromTheirPage() async throws {
        try await SystemHarness.run { system in
            let store = EndpointStore(client: system.db.client, logger: TestDatabase.logger)
            var changes = EndpointStore.Changes()
            changes.description = "billing-service"
            let endpoint = try await store.add(url: "https://user:pass@hooks.example/path?token=SECRET", changes: changes, secret: Endpoint.newSecret())
            try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_ep", user: "user_ep", product: "web.lifetime"))
            try await system.drain()
            try await ConsoleHarness.run(system) { signedOut in
                let console = try await signedOut.signedIn()
                let list = try await console.page("/endpoints")
                #expect(list.contains("ep_\(endpoint.id)") && list.contains("billing-service") && list.contains("healthy"))
                #expect(!list.contains("SECRET") && !list.contains("pass@") && !list.contains("/path"), "the URL as labels show it")
                var page = try await console.page("/endpoints/\(endpoint.id)")
                #expect(page.contains("entitlement.granted"), "the delivery of the purchase's event")
                #expect(page.contains("<span class=\"pill warn\">pending</span>"))

                let asked = try await console.submit("/endpoints/\(endpoint.id)/disable", from: page)
                #expect(asked.status == .ok && String(buffer: asked.body).contains("none is lost"), "confirmed first")
                #expect(try await store.endpoint(endpoint.id)?.disabledAt == nil)
                #expect(try await console.submit("/endpoints/\(endpoint.id)/disable", from: page, ["confirm": "yes"]).status == .seeOther)
                #expect(try await store.endpoint(endpoint.id)?.disabledAt != nil)
                page = try await console.page("/endpoints/\(endpoint.id)")
                #expect(page.contains("disabled"))
                #expect(try await console.submit("/endpoints/\(endpoint.id)/enable", from: page).status == .ok, "confirmed first")
                #expect(try await store.endpoint(endpoint.id)?.disabledAt != nil)
                #expect(try await console.submit("/endpoints/\(endpoint.id)/enable", from: page, ["confirm": "yes"]).status == .seeOther)
                #expect(try await store.endpoint(endpoint.id)?.disabledAt == nil)

                // Resend: the count first, then the deliveries back in the queue.
                try await system.db.client.query(
                    "UPDATE deliveries SET state = 'done', finished_at = now(), http_status = 204", logger: TestDatabase.logger)
                #expect(try await console.page("/endpoints/\(endpoint.id)").contains("<td>204</td>"), "the status the endpoint answered")
                let confirm = try await console.submit("/endpoints/\(endpoint.id)/resend", from: page, ["since": "1h"])
                #expect(String(buffer: confirm.body).contains("Queue 2 deliveries to ep_\(endpoint.id) again"))
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'pending'") == 0)
                let resent = try await console.submit("/endpoints/\(endpoint.id)/resend", from: page, ["since": "1h", "confirm": "yes"])
                #expect(resent.headers[.location]?.contains("Queued%202") == true)
                #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE state = 'pending'") == 2)
                let badWindow = try await console.submit("/endpoints/\(endpoint.id)/resend", from: page, ["since": "last tuesday"])
                #expect(badWindow.headers[.location]?.contains("since%20must%20be") == true)

                // Rotation: the new secret shown once, the old one kept for the grace.
                let before = try #require(try await store.endpoint(endpoint.id)?.secret)
                let rotated = try await console.submit("/endpoints/\(endpoint.id)/rotate-secret", from: page, ["confirm": "yes"])
                let after = try #require(try await store.endpoint(endpoint.id))
                #expect(String(buffer: rotated.body).contains(try #require(after.secret)))
                #expect(after.previousSecret == before && after.secret != before)
                #expect(!(try await console.page("/endpoints/\(endpoint.id)")).contains(try #require(after.secret)), "shown once")
            }
        }
    }
}
