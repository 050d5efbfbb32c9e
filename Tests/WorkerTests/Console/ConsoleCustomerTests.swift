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

/// The customer page and `worker customer`: one person's Stripe and Apple purchases, with the
/// timeline built from the real stored events.
@Suite(.timeLimit(.minutes(3)))
struct ConsoleCustomerTests {
    static let user = "6f1d2c3b-4a59-4e8f-9a0b-1c2d3e4f5a6b"

    /// An Apple subscription bought and renewed, a renewal sent twice, and a Stripe purchase, all one user's.
    static func story(_ system: SystemHarness) async throws {
        let start = Date().addingTimeInterval(-3_600)
        try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("8801", user: user, purchased: start), at: start)
        var renewal = subscription("8802", user: user, purchased: start.addingTimeInterval(600), expires: Date().addingTimeInterval(30 * 86_400))
        renewal.originalTransactionId = "8801"
        try await system.notify("DID_RENEW", transaction: renewal, at: start.addingTimeInterval(600))
        try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_story", user: user, product: "web.lifetime", customer: "cus_story"))
        try await system.drain()
        // The renewal again, older than what is applied: stale, announced nothing.
        try await system.notify("DID_RENEW", transaction: renewal, at: start.addingTimeInterval(300))
        try await system.drain()
    }

    @Test func theTimelineShowsEveryEventItsDecisionAndWhatItSent() async throws {
        try await SystemHarness.run { system in
            try await Self.story(system)
            try await ConsoleHarness.run(system) { signedOut in
                let console = try await signedOut.signedIn()
                // Found by any of its ids.
                for query in [Self.user, "8801", "cus_story", "pi_story"] {
                    let response = try await console.get("/customers?" + FormFields.encode([("q", query)]))
                    #expect(response.status == .seeOther, "\(query)")
                    #expect(response.headers[.location] == "/customer?id=\(Self.user)", "\(query)")
                }
                #expect(try await console.page("/customers?q=nobody_we_know").contains("id=\"no-match\""))

                let page = try await console.page("/customer?id=\(Self.user)")
                #expect(page.contains("apple:sandbox:8801") && page.contains("pro.monthly") && page.contains("web.lifetime"))
                #expect(page.components(separatedBy: "<span class=\"pill good\">active</span>").count - 1 == 2, "both active")
                #expect(page.contains("pi_story") && page.contains("8802"), "the ledger")
                let timeline = try #require(page.components(separatedBy: "id=\"timeline\"").last)
                for text in ["SUBSCRIBED", "DID_RENEW", "payment_intent.succeeded", "→ <span class=\"pill\">applied</span>",
                    "→ <span class=\"pill\">stale</span>", "sent entitlement.granted", "sent entitlement.renewed", "· webhook"] {
                    #expect(timeline.contains(text), "\(text)")
                }
                // Newest first: the stale copy (received last, but signed earliest) is placed by its signed time.
                let subscribed = try #require(timeline.range(of: "SUBSCRIBED"))
                let purchase = try #require(timeline.range(of: "payment_intent.succeeded"))
                #expect(purchase.lowerBound < subscribed.lowerBound)
            }
        }
    }

    @Test func theShellPrintsTheSameStory() async throws {
        try await SystemHarness.run { system in
            try await Self.story(system)
            let run = try await CommandLineTests.runSeparately(
                "worker", ["customer", "8801", "--json"], environment: ["DATABASE_URL": system.db.url.urlString, "LOG_LEVEL": "error"])
            #expect(run.status == 0, "\(run.stderr)")
            let story = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            #expect(story["subject"] as? String == Self.user)
            #expect((story["entitlements"] as? [[String: Any]])?.count == 2)
            let timeline = try #require(story["timeline"] as? [[String: Any]])
            #expect(timeline.count == 4)
            #expect(Set(timeline.compactMap { $0["decision"] as? String }) == ["applied", "stale"])
            #expect(timeline.contains { ($0["outgoing"] as? [[String: Any]])?.first?["type"] as? String == "entitlement.renewed" })

            let text = try await CommandLineTests.runSeparately(
                "worker", ["customer", Self.user], environment: ["DATABASE_URL": system.db.url.urlString, "LOG_LEVEL": "error"])
            #expect(text.status == 0)
            #expect(text.stdout.contains("timeline, newest first:") && text.stdout.contains("DID_RENEW"))
            let unknown = try await CommandLineTests.runSeparately(
                "worker", ["customer", "nobody_at_all"], environment: ["DATABASE_URL": system.db.url.urlString, "LOG_LEVEL": "error"])
            #expect(unknown.status == 1)
            #expect(unknown.stderr.contains("nothing is stored about nobody_at_all"))
        }
    }

    @Test func aRebuildIsShownAsADryRunBeforeItIsApplied() async throws {
        try await SystemHarness.run { system in
            try await Self.story(system)
            try await system.db.client.query(
                "UPDATE entitlements SET status = 'expired' WHERE entity_key = 'apple:sandbox:8801'", logger: TestDatabase.logger)
            try await ConsoleHarness.run(system) { signedOut in
                let console = try await signedOut.signedIn()
                let page = try await console.page("/customer?id=\(Self.user)")
                let dry = try await console.submit("/customer/rebuild", from: page, ["id": Self.user])
                let dryText = String(buffer: dry.body)
                #expect(dryText.contains("Dry run, nothing changed yet: 2 entities, 1 would change."), "\(dryText)")
                #expect(dryText.contains("status: expired → active"))
                #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE status = 'expired'") == 1)
                let applied = try await console.submit("/customer/rebuild", from: dryText, ["id": Self.user, "confirm": "yes"])
                #expect(String(buffer: applied.body).contains("Done: 2 entities, 1 changed."))
                #expect(try await system.db.scalar("SELECT count(*) FROM entitlements WHERE status = 'expired'") == 0)
                let reconcile = try await console.submit("/customer/reconcile", from: page, ["id": Self.user])
                #expect(reconcile.headers[.location]?.contains("Reconciliation%20is%20off") == true, "no provider credentials here")
            }
        }
    }

    @Test func reconcileNowAsksTheProviderAndTheAnswerJoinsTheTimeline() async throws {
        try await AppleRecoveryTests.run { system, standIn, recovery in
            let user = UUID().uuidString.lowercased()
            let bought = Date().addingTimeInterval(-40 * 86_400)
            let purchase = subscription("9911", user: user, purchased: bought)
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: purchase, at: bought.addingTimeInterval(60))
            try await system.drain()
            var current = purchase
            current.signedDate = Date().millisecondsSince1970
            var renewal = SampleAppleRenewalInfo(originalTransactionId: "9911", autoRenewStatus: 0)
            renewal.expirationIntent = 1
            standIn.setStatus(
                .init(status: 2, signedTransactionInfo: try TestCredentials.signer.sign(current),
                      signedRenewalInfo: try TestCredentials.signer.sign(renewal)),
                originalTransactionID: "9911")
            try await ConsoleHarness.run(system, reconciler: recovery.reconciler) { signedOut in
                let console = try await signedOut.signedIn()
                let page = try await console.page("/customer?id=\(user)")
                let asked = try await console.submit("/customer/reconcile", from: page, ["id": user])
                #expect(asked.status == .ok && String(buffer: asked.body).contains("Reconcile 1"), "confirmed first")
                let reconciled = try await console.submit("/customer/reconcile", from: page, ["id": user, "confirm": "yes"])
                #expect(reconciled.status == .seeOther)
                #expect(reconciled.headers[.location]?.contains("Reconciled%201%3A%20unchanged%200%2C%20corrected%201") == true,
                        "\(reconciled.headers[.location] ?? "")")
                try await system.drain()
                let after = try await console.page("/customer?id=\(user)")
                #expect(after.contains("<span class=\"pill bad\">no access</span>") && after.contains("expired: voluntary"))
                #expect(after.contains("SUBSCRIPTION_STATUS") && after.contains("· reconciliation"), "the provider's answer, stored as an event")

                // The stored notification, its JWS claims decoded beside the raw payload.
                let id = try await system.db.scalar("SELECT id FROM events WHERE type = 'SUBSCRIBED'")
                let detail = try await console.page("/dead-letters/events/\(id)")
                #expect(detail.contains("Decoded claims") && detail.contains("&quot;notificationType&quot; : &quot;SUBSCRIBED&quot;"))
                #expect(detail.contains("&quot;originalTransactionId&quot; : &quot;9911&quot;"), "the nested transaction too")
            }
        }
    }

    /// Balances and their ledger, on the customer page and in `worker customer`: a grant of a
    /// catalog product and an operator's adjustment, with who made it; a user known only by
    /// balances is found too.
    @Test func balancesAndTheirLedgerAreShownWithWhoMadeEachChange() async throws {
        try await SystemHarness.run { system in
            _ = try await CatalogStore(client: system.db.client, logger: TestDatabase.logger).add(
                CatalogProduct(id: "web.lifetime", type: .nonConsumable, currencyGrants: ["credits": 250]))
            try await Self.story(system)
            let ledger = BalanceStore(client: system.db.client, logger: TestDatabase.logger)
            _ = try await ledger.adjust(
                user: Self.user, try BalanceAdjustments(["credits": -300]), cause: .operator, key: nil, digest: nil, floor: true,
                reason: "abuse <script>", actor: "alice")
            _ = try await ledger.adjust(user: "only_credits", try BalanceAdjustments(["gems": 3]), cause: .api, key: "k", digest: nil)
            try await ConsoleHarness.run(system) { signedOut in
                let console = try await signedOut.signedIn()
                let page = try await console.page("/customer?id=\(Self.user)")
                let balances = try #require(page.components(separatedBy: "id=\"balances\"").last)
                #expect(balances.contains("<span class=\"pill\">credits 0</span>"), "\(balances.prefix(300))")
                let changes = try #require(page.components(separatedBy: "id=\"balance-changes\"").last)
                #expect(changes.contains("credits -250") && changes.contains("(could not take 50 credits)") && changes.contains("alice"))
                #expect(changes.contains("abuse &lt;script&gt;") && changes.contains("credits +250") && changes.contains("purchase"))
                #expect(try await console.get("/customers?q=only_credits").headers[.location] == "/customer?id=only_credits")
                #expect(try await console.page("/customer?id=only_credits").contains("<span class=\"pill\">gems 3</span>"))
            }
            let run = try await CommandLineTests.runSeparately(
                "worker", ["customer", Self.user, "--json"], environment: ["DATABASE_URL": system.db.url.urlString, "LOG_LEVEL": "error"])
            let story = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            #expect(story["balances"] as? [String: Int] == ["credits": 0])
            #expect((story["balance_transactions"] as? [[String: Any]])?.map { $0["cause"] as? String } == ["operator", "purchase"])
            let text = try await CommandLineTests.runSeparately(
                "worker", ["customer", Self.user], environment: ["DATABASE_URL": system.db.url.urlString, "LOG_LEVEL": "error"])
            #expect(text.stdout.contains("operator: credits -250 → 0 (could not take 50 credits) — abuse <script> [by alice]"), "\(text.stdout)")
        }
    }
}
