// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport
@testable import Worker

/// docs/getting-started.md tells integrators what to enable; these are checked against the code.
/// (Its shell snippets are run by scripts/first-hour against a running stack.)
struct GettingStartedTests {
    static func document() throws -> String {
        try String(contentsOf: Vectors.repository.appendingPathComponent("docs/getting-started.md"), encoding: .utf8)
    }

    /// The lines between `<!-- NAME:begin -->` and `<!-- NAME:end -->`, each `- `code``.
    static func list(_ name: String, in text: String) throws -> [String] {
        let begin = try #require(text.range(of: "<!-- \(name):begin -->"))
        let end = try #require(text.range(of: "<!-- \(name):end -->"))
        return text[begin.upperBound..<end.lowerBound].split(separator: "\n").compactMap { line in
            guard line.hasPrefix("- `"), line.hasSuffix("`") else { return nil }
            return String(line.dropFirst(3).dropLast())
        }
    }

    @Test func theStripeEventTypesToEnableAreExactlyTheOnesTheHandlersActOn() throws {
        let listed = try Self.list("stripe-event-types", in: try Self.document())
        #expect(listed == StripeEventType.allCases.map(\.rawValue))
    }

    @Test func theAppStoreConnectURLsAreIngestsRoutes() throws {
        let text = try Self.document()
        #expect(text.contains("`https://sluice.example.com/v1/webhooks/appstore-notifications`"))
        #expect(text.contains("`https://sluice.example.com/v1/webhooks/appstore-notifications?sandbox=true`"))
        #expect(text.contains("`https://sluice.example.com/v1/webhooks/stripe`"))
        #expect(text.contains("**Version 2**"))
    }
}
