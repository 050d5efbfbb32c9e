// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Testing
import TestSupport

/// An entitlement whose ending event never came reads inactive once its period (and the renewal
/// leeway, `ENTITLEMENT_LEEWAY_SECONDS`, one hour by default) is over — through the read API.
@Suite(.timeLimit(.minutes(3)))
struct EntitlementExpiryTests {
    @Test(arguments: [(-7_200.0, false), (-600.0, true), (86_400.0, true)])
    func aStripeSubscriptionWithoutItsEndingEvent(periodEndFromNow: TimeInterval, active: Bool) async throws {
        try await SystemHarness.run { system in
            let end = Date().addingTimeInterval(periodEndFromNow).rounded
            try await system.stripe("customer.subscription.updated", StripeObjects.subscription("sub_x", periodEnd: end),
                                    at: Date().addingTimeInterval(-40 * 86_400))
            try await system.drain()
            let e = try await system.entitlement(userID: "user_1")
            #expect(e["status"] as? String == "active")
            #expect(e["is_active"] as? Bool == active)
        }
    }

    @Test func anAppleSubscriptionWhoseExpiredNotificationWasLost() async throws {
        try await SystemHarness.run { system in
            // Bought nine months ago for a month; only its SUBSCRIBED arrived (signed the day of purchase).
            let purchased = Date().addingTimeInterval(-270 * 86_400)
            let user = "0b1f0c9e-5d1a-4a38-9a51-2f3b0c1d2e3f"
            try await system.notify("SUBSCRIBED", "INITIAL_BUY", transaction: subscription("2000000777", user: user, purchased: purchased),
                                    at: purchased.addingTimeInterval(60))
            try await system.drain()
            let e = try await system.entitlement(userID: user)
            #expect(e["status"] as? String == "active")
            #expect(e["is_active"] as? Bool == false)
        }
    }
}
