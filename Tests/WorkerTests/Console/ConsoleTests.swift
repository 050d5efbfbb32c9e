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

/// The console over real stored events: signing in, CSRF, read-only, and every action, each
/// checked in the database it changes.
@Suite(.timeLimit(.minutes(3)))
struct ConsoleTests {
    /// A payment for a customer nobody knows, with no user: never applicable, dead after one attempt.
    static func poison(_ system: SystemHarness, _ id: String) async throws {
        try await system.stripe(
            "payment_intent.succeeded", StripeObjects.paymentIntent("pi_\(id)", user: nil, customer: "cus_unknown_\(id)"), id: "evt_\(id)")
    }

    @Test func everyPageNeedsASessionAndSigningInSetsAStrictCookie() async throws {
        try await SystemHarness.run { system in
            try await ConsoleHarness.run(system) { console in
                for path in ["/", "/dead-letters", "/customers", "/customer?id=x", "/endpoints", "/products", "/dead-letters/events/1"] {
                    let response = try await console.get(path)
                    #expect(response.status == .seeOther, "\(path)")
                    #expect(response.headers[.location] == "/login")
                }
                let refused = try await console.post("/dead-letters/replay", ["queue": "events"])
                #expect(refused.status == .unauthorized)

                let wrong = try await console.post("/login", ["key": "not_the_key_but_just_as_long_000000000000"])
                #expect(wrong.status == .unauthorized)
                #expect(wrong.headers[.setCookie] == nil)

                let response = try await console.post("/login", ["key": ConsoleHarness.key])
                let cookie = try #require(response.headers[.setCookie])
                for attribute in ["Secure", "HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"] {
                    #expect(cookie.contains(attribute), "\(cookie)")
                }
                let signedIn = try await console.signedIn()
                let overview = try await signedIn.get("/")
                #expect(overview.status == .ok)
                let csp = try #require(overview.headers[.contentSecurityPolicy])
                #expect(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'") && !csp.contains("unsafe-inline"))
                #expect(overview.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
                #expect(overview.headers[.cacheControl] == "no-store")
                let html = String(buffer: overview.body)
                #expect(html.contains("id=\"queue-events\"") && html.contains("id=\"queue-deliveries\""))
                #expect(!html.contains("<script") && !html.contains("style=\""), "no inline script or style for the CSP to block")

                let out = try await signedIn.submit("/logout", from: html)
                #expect(out.status == .seeOther)
                #expect(out.headers[.setCookie]?.contains("Max-Age=0") == true)
            }
        }
    }

    /// Issue 37, finding 4: a copy of the cookie kept after signing out replays nothing, on any
    /// replica (two consoles on one database here); a session left idle 30 minutes ends.
    @Test func signingOutEndsTheSessionEverywhereAndAnIdleOneEnds() async throws {
        try await SystemHarness.run { system in
            try await Self.poison(system, "console_after_sign_out")
            try await system.drain()
            let id = try await system.db.scalar("SELECT id FROM events WHERE state = 'dead'")
            try await ConsoleHarness.run(system) { signedOut in
                let console = try await signedOut.signedIn()
                #expect(console.cookie?.hasPrefix("__Host-sluice_console=") == true, "a __Host- cookie: Secure, Path=/, no Domain")
                let detail = try await console.page("/dead-letters/events/\(id)")
                #expect(try await console.submit("/logout", from: detail).status == .seeOther)
                // The copied cookie, with the form's token, after the sign-out: refused, nothing replayed.
                let replay = try await console.submit("/dead-letters/events/\(id)/replay", from: detail, ["confirm": "yes"])
                #expect(replay.status == .unauthorized)
                #expect(try await console.get("/").headers[.location] == "/login")
                try await ConsoleHarness.run(system) { (otherReplica: ConsoleHarness) async throws in
                    var copied = otherReplica
                    copied.cookie = console.cookie
                    #expect(try await copied.get("/").headers[.location] == "/login", "another replica refuses it too")
                }
                #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'dead'") == 1)

                // Idle: the session's last request 31 minutes ago.
                let idle = try await signedOut.signedIn()
                #expect(try await idle.get("/").status == .ok)
                try await system.db.client.query(
                    "UPDATE console_sessions SET last_seen_at = now() - interval '31 minutes' WHERE ended_at IS NULL", logger: TestDatabase.logger)
                #expect(try await idle.get("/").headers[.location] == "/login")
                let fresh = try await signedOut.signedIn()
                #expect(try await fresh.get("/").status == .ok, "a new sign-in works")
            }
        }
    }

    /// Sign-in attempts are limited per client address before the key is looked at: past the
    /// burst even the right key is refused with 429 and `Retry-After`, so guessing gains nothing.
    @Test func signInAttemptsAreLimitedBeforeTheKeyIsChecked() async throws {
        try await SystemHarness.run { system in
            try await ConsoleHarness.run(system) { console in
                let burst = Int(LoginController.signInLimit.burst)
                for attempt in 0..<burst {
                    let wrong = try await console.post("/login", ["key": "not_the_key_but_just_as_long_00000000000\(attempt)"])
                    #expect(wrong.status == .unauthorized, "attempt \(attempt)")
                }
                let limited = try await console.post("/login", ["key": ConsoleHarness.key])
                #expect(limited.status == .tooManyRequests)
                #expect(limited.headers[.setCookie] == nil)
                let retryAfter = try #require(limited.headers[.retryAfter].flatMap(Int.init))
                #expect(retryAfter >= 1 && retryAfter <= 6)
                #expect(String(buffer: limited.body).contains("Too many sign-in attempts"))
            }
        }
    }

    @Test func aDeadLetterIsReplayedOnlyWithTheSessionsTokenAndAConfirmation() async throws {
        try await SystemHarness.run(worker: ["MAX_ATTEMPTS": "1"]) { system in
            try await Self.poison(system, "console_dead_1")
            try await system.drain()
            let id = try await system.db.scalar("SELECT id FROM events WHERE state = 'dead'")
            try await ConsoleHarness.run(system) { signedOut in
                let console = try await signedOut.signedIn()
                let list = try await console.page("/dead-letters")
                #expect(list.contains("events/\(id)") && list.contains("payment_intent.succeeded"))
                let detail = try await console.page("/dead-letters/events/\(id)")
                #expect(detail.contains("cus_unknown_console_dead_1"), "the payload is shown")
                #expect(detail.contains("<h2>Attempts</h2>") && detail.contains("<td class=\"num\">1</td>"), "and its attempt")

                // Without the token, with another session's token, from another site: refused, still dead.
                #expect(try await console.post("/dead-letters/events/\(id)/replay", ["confirm": "yes"]).status == .forbidden)
                let other = try await signedOut.signedIn()
                let otherPage = try await other.page("/")
                #expect(try await console.submit("/dead-letters/events/\(id)/replay", from: otherPage, ["confirm": "yes"]).status == .forbidden)
                let crossSite = try await console.post(
                    "/dead-letters/events/\(id)/replay", ["confirm": "yes", "csrf": ConsoleHarness.csrf(in: detail) ?? ""],
                    headers: [HTTPField.Name("Sec-Fetch-Site")!: "cross-site"])
                #expect(crossSite.status == .forbidden)
                let otherOrigin = try await console.post(
                    "/dead-letters/events/\(id)/replay", ["confirm": "yes", "csrf": ConsoleHarness.csrf(in: detail) ?? ""],
                    headers: [HTTPField.Name("Origin")!: "https://evil.example"])
                #expect(otherOrigin.status == .forbidden)
                #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'dead'") == 1)

                // With it: first a confirmation, then the replay.
                let confirm = try await console.submit("/dead-letters/events/\(id)/replay", from: detail)
                #expect(confirm.status == .ok)
                #expect(String(buffer: confirm.body).contains("name=\"confirm\" value=\"yes\""))
                #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'dead'") == 1)
                let done = try await console.submit("/dead-letters/events/\(id)/replay", from: detail, ["confirm": "yes"])
                #expect(done.status == .seeOther)
                #expect(done.headers[.location]?.hasPrefix("/dead-letters?queue=events&notice=Replayed") == true)
                #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'pending' AND attempts = 0 AND id = \(id)") == 1)
                #expect(try await console.page("/dead-letters").contains("id=\"empty\""))
            }
        }
    }

    @Test func deadLettersAreDiscardedOneOrAllByFilter() async throws {
        try await SystemHarness.run(worker: ["MAX_ATTEMPTS": "1"]) { system in
            for index in 1...3 { try await Self.poison(system, "console_bulk_\(index)") }
            try await system.drain()
            let first = try await system.db.scalar("SELECT min(id) FROM events WHERE state = 'dead'")
            try await ConsoleHarness.run(system) { signedOut in
                let console = try await signedOut.signedIn()
                let detail = try await console.page("/dead-letters/events/\(first)")
                #expect(try await console.submit("/dead-letters/events/\(first)/discard", from: detail, ["confirm": "yes"]).status == .seeOther)
                #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'discarded'") == 1)

                let filtered = try await console.page("/dead-letters?queue=events&source=stripe&type=payment_intent.succeeded")
                #expect(filtered.contains("Discard all 2 shown"))
                let confirm = try await console.submit(
                    "/dead-letters/discard", from: filtered, ["queue": "events", "source": "stripe", "type": "payment_intent.succeeded"])
                #expect(String(buffer: confirm.body).contains("Discard 2 dead items matching these filters?"))
                let done = try await console.submit(
                    "/dead-letters/discard", from: filtered,
                    ["queue": "events", "source": "stripe", "type": "payment_intent.succeeded", "confirm": "yes"])
                #expect(done.status == .seeOther)
                #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'discarded'") == 3)
                #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'dead'") == 0)
                let unknownFilter = try await console.page("/dead-letters?source=paypal")
                #expect(unknownFilter.contains("unknown source paypal"))
            }
        }
    }

    @Test func aReadOnlyConsoleShowsEverythingAndChangesNothing() async throws {
        try await SystemHarness.run(worker: ["MAX_ATTEMPTS": "1"]) { system in
            try await Self.poison(system, "console_read_only")
            try await system.drain()
            let id = try await system.db.scalar("SELECT id FROM events WHERE state = 'dead'")
            let endpoint = try await EndpointStore(client: system.db.client, logger: TestDatabase.logger).add(
                url: "http://127.0.0.1:9/hooks", changes: .init(), secret: Endpoint.newSecret())
            try await ConsoleHarness.run(system, readOnly: true) { signedOut in
                let console = try await signedOut.signedIn()
                let detail = try await console.page("/dead-letters/events/\(id)")
                #expect(detail.contains("Read-only console"))
                #expect(!detail.contains("/replay\""), "no action buttons")
                for (path, fields) in [
                    ("/dead-letters/events/\(id)/replay", ["confirm": "yes"]), ("/dead-letters/replay", ["confirm": "yes"]),
                    ("/endpoints/\(endpoint.id)/disable", ["confirm": "yes"]), ("/endpoints/\(endpoint.id)/rotate-secret", ["confirm": "yes"]),
                    ("/customer/rebuild", ["id": "anyone", "confirm": "yes"]),
                ] {
                    #expect(try await console.submit(path, from: detail, fields).status == .forbidden, "\(path)")
                }
                #expect(try await system.db.scalar("SELECT count(*) FROM events WHERE state = 'dead'") == 1)
                #expect(try await system.db.scalar("SELECT count(*) FROM endpoints WHERE disabled_at IS NULL AND previous_secret IS NULL") == 1)
                #expect(try await console.submit("/logout", from: detail).status == .seeOther, "signing out still works")
            }
        }
    }
}
