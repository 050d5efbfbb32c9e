// SPDX-License-Identifier: Apache-2.0
import Foundation
import Mustache
import Shared
import Testing

@testable import Worker

/// What the console draws from data: the chart, the decoded claims, the reasons for access.
struct ConsoleViewTests {
    @Test func theChartPutsTheLatestBucketLastAndScalesToTheTallest() {
        let chart = ActivityChart(doneAgo: [0: 10, 11: 5, 12: 99], failedAgo: [1: 2])
        #expect(chart.done == [5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10], "bucket 12 is older than an hour and left out")
        #expect(chart.failed == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0])
        let svg = chart.svg
        #expect(svg.components(separatedBy: "<rect class=\"done\"").count - 1 == 2)
        #expect(svg.components(separatedBy: "<rect class=\"failed\"").count - 1 == 1)
        #expect(svg.contains("y=\"0\" width=\"8\" height=\"100\""), "the tallest bar fills the height: \(svg)")
        #expect(svg.contains("aria-label=\"last hour: 15 done, 2 failed attempts\""))
        #expect(!ActivityChart(doneAgo: [:], failedAgo: [:]).svg.contains("<rect"))
    }

    @Test func jwsInsideJWSIsDecodedForReading() throws {
        func jws(_ claims: [String: Any]) throws -> String {
            let header = Base64URL.encode(Array(#"{"alg":"ES256","x5c":[]}"#.utf8))
            return header + "." + Base64URL.encode(Array(try JSONSerialization.data(withJSONObject: claims))) + ".c2ln"
        }
        let transaction = try jws(["transactionId": "2000000111", "productId": "pro.monthly"])
        let payload = try jws(["notificationType": "DID_RENEW", "data": ["signedTransactionInfo": transaction, "bundleId": "com.example"]])
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["signedPayload": payload]), as: UTF8.self)
        let decoded = try #require(JWSClaims.decoded(body))
        #expect(decoded.contains("\"notificationType\" : \"DID_RENEW\""))
        #expect(decoded.contains("\"transactionId\" : \"2000000111\""), "the nested JWS too: \(decoded)")
        #expect(JWSClaims.decoded(#"{"id":"evt_1","object":"event"}"#) == nil, "no JWS in a Stripe event")
        #expect(JWSClaims.decoded("not json") == nil)
        #expect(JWSClaims.decoded(#"{"signedPayload":"a.b.c"}"#) == nil, "three parts that are not JWS stay text")
    }

    @Test func accessIsExplainedInWords() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func body(_ status: EntitlementStatus, expires: TimeInterval?, environment: PurchaseEnvironment = .production, access: SandboxAccess = .anybody) throws
            -> EntitlementBody {
            var state = EntitlementState(
                entityKey: "apple:production:1", userID: "u", productID: "pro", productType: .autoRenewable, source: .storeKit, status: status)
            state.environment = environment
            state.expiresAt = expires.map { now.addingTimeInterval($0) }
            return EntitlementBody(.init(id: UUID(), state: state), now: now, leeway: 3_600, sandboxAccess: access, userID: "u")
        }
        #expect(EntitlementExplanation.why(try body(.active, expires: 86_400), now: now).hasPrefix("paid until"))
        #expect(EntitlementExplanation.why(try body(.active, expires: -60), now: now).contains("within the leeway"))
        #expect(EntitlementExplanation.why(try body(.active, expires: -7_200), now: now).contains("with no renewal"))
        #expect(EntitlementExplanation.why(try body(.cancelled, expires: 86_400), now: now).hasPrefix("cancelled, but paid until"))
        #expect(EntitlementExplanation.why(try body(.refunded, expires: 86_400), now: now) == "refunded")
        #expect(EntitlementExplanation.why(try body(.active, expires: 86_400, environment: .sandbox, access: try SandboxAccess(rule: .nobody, users: [])), now: now)
            .contains("SANDBOX_ACCESS"))
    }
}

extension ConsoleViewTests {
    /// A page is a typed value: the frame finds the layout's names first, then the page's, and
    /// an optional that is `nil` opens no section (blank text is made `nil` by `nonBlank`).
    @Test func theFrameFindsTheLayoutsNamesThenThePagesAndNoneOpensNoSection() throws {
        let layout = ConsoleLayout(title: "Refused", readOnly: false, signedIn: false, csrf: nil, nav: [], notice: nil)
        let frame = ConsoleFrame(layout: layout, page: MessagePage(lines: ["gone"], secret: nil, back: "/"))
        #expect(frame.child(named: "title") as? String == "Refused")
        #expect(frame.child(named: "back") as? String == "/")
        #expect(frame.child(named: "lines") as? [String] == ["gone"])
        #expect(frame.child(named: "secret") == nil, "nil, not Optional.none inside Any")
        #expect(frame.child(named: "csrf") == nil && frame.child(named: "nothing") == nil)
        #expect("".nonBlank == nil && "x".nonBlank == "x")

        var library = MustacheLibrary()
        for template in ConsoleTemplate.allCases { try library.register(template.text, named: template.rawValue) }
        let withoutSecret = try #require(library.render(frame, withTemplate: MessagePage.template.rawValue))
        #expect(withoutSecret.contains("<p>gone</p>") && withoutSecret.contains("<title>Refused · Sluice console</title>"))
        #expect(!withoutSecret.contains("class=\"secret\""), "no section for a nil secret")
        let withSecret = ConsoleFrame(layout: layout, page: MessagePage(lines: [], secret: "whsec_<1>", back: "/"))
        let shown = try #require(library.render(withSecret, withTemplate: MessagePage.template.rawValue))
        #expect(shown.contains("<code class=\"secret\">whsec_&lt;1&gt;</code>"), "escaped: \(shown)")
    }

    /// Every template a page names is registered, so the console never draws an empty page.
    @Test func everyPageNamesARegisteredTemplate() {
        let pages: [any ConsolePage.Type] = [
            LoginPage.self, ConfirmPage.self, MessagePage.self, OverviewPage.self, DeadLetterListPage.self, DeadLetterPage.self,
            CustomerSearchPage.self, CustomerPage.self, RebuildPage.self, EndpointListPage.self, EndpointPage.self, ProductListPage.self,
        ]
        let named = Set(pages.map { $0.template })
        #expect(named.union([.layout]) == Set(ConsoleTemplate.allCases), "a template no page draws, or a page without one")
    }
}
