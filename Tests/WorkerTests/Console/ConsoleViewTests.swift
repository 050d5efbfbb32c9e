// SPDX-License-Identifier: Apache-2.0
import Foundation
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
    @Test func blankTextOpensNoSection() throws {
        let values = ConsoleRenderer.droppingBlanks([
            "detail": "", "kept": "x", "rows": [["subtype": "", "type": "DID_RENEW"]], "count": 0,
        ])
        #expect(values["detail"] == nil && values["kept"] as? String == "x" && values["count"] as? Int == 0)
        let rows = try #require(values["rows"] as? [[String: Any]])
        #expect(rows[0]["subtype"] == nil && rows[0]["type"] as? String == "DID_RENEW")
    }
}
