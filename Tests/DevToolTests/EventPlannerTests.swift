// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Testing

@testable import DevTool

/// The end-to-end driver's events must look like real traffic where it matters to the worker.
/// One Stripe customer shared by every buyer made each applying transaction re-point that one
/// `provider_links` row, so they all queued behind each other (stop 32's chaos failure).
struct EventPlannerTests {
    static func planner(poison: Set<Int> = []) throws -> EventPlanner {
        EventPlanner(
            runID: "t", signer: AppleJWSSigner(pki: try ApplePKI.generate()), bundleID: "com.example.app",
            appleEvery: 4, redeliverEvery: 5, poisonIndexes: poison)
    }

    /// The `data.object.customer` of a Stripe event body.
    static func customer(of event: PlannedEvent) throws -> String? {
        let json = try JSONSerialization.jsonObject(with: event.body) as? [String: Any]
        let object = (json?["data"] as? [String: Any])?["object"] as? [String: Any]
        return object?["customer"] as? String
    }

    @Test func everyStripeBuyerIsACustomerOfTheirOwn() throws {
        let planner = try Self.planner(poison: [7])
        let events = try (0..<40).map(planner.event)
        let stripe = events.filter { $0.provider == .stripe }
        let customers = try stripe.map { try #require(try Self.customer(of: $0)) }
        #expect(stripe.count == 30)
        #expect(Set(customers).count == stripe.count, "customers: \(customers)")
        #expect(Set(stripe.map(\.user)).count == stripe.count)
    }

    @Test func theSameIndexIsTheSameBuyerAndCustomer() throws {
        let planner = try Self.planner()
        let first = try planner.event(1), again = try planner.event(1)
        #expect(first.user == again.user)
        #expect(try Self.customer(of: first) == Self.customer(of: again))
    }
}
