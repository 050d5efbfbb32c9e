// SPDX-License-Identifier: Apache-2.0
import Shared
import Testing

/// Apple's vocabulary, defined once: each name read and written back the same, a name Apple adds
/// later kept as sent, and the reconciliation's status names as the verifier stores them.
struct AppleNotificationTypeTests {
    @Test func everyKnownTypeAndSubtypeRoundTrips() {
        for name in ["SUBSCRIBED", "DID_RENEW", "REFUND", "CONSUMPTION_REQUEST", "TEST", "STOREKIT_TRANSACTION", "SUBSCRIPTION_STATUS"] {
            let type = AppleNotificationType(rawValue: name)
            #expect(type.rawValue == name)
            if case .other = type { Issue.record("\(name) is known") }
        }
        #expect(AppleNotificationType(rawValue: "DID_CHANGE_RENEWAL_STATUS") == .didChangeRenewalStatus)
        #expect(AppleSubtype(rawValue: "AUTO_RENEW_DISABLED") == .autoRenewDisabled)
        #expect(AppleSubtype(rawValue: "INITIAL_BUY").rawValue == "INITIAL_BUY")
        #expect(AppleNotificationVerifier.storeKitEventType == AppleNotificationType.storeKitTransaction.rawValue)
        #expect(AppleNotificationVerifier.subscriptionStatusEventType == AppleNotificationType.subscriptionStatus.rawValue)
    }

    @Test func aNameAppleAddsLaterIsKeptAsSent() {
        #expect(AppleNotificationType(rawValue: "ONE_DAY_NEW") == .other("ONE_DAY_NEW"))
        #expect(AppleNotificationType(rawValue: "ONE_DAY_NEW").rawValue == "ONE_DAY_NEW")
        #expect(AppleSubtype(rawValue: "SOMETHING_ELSE").rawValue == "SOMETHING_ELSE")
        // Apple's names are case-sensitive: a lower-case one is not a known type.
        #expect(AppleNotificationType(rawValue: "refund") == .other("refund"))
    }

    @Test func theSubscriptionStatusesAreApplesNumbers() {
        #expect(AppleNotificationVerifier.subscriptionStatusNames == [
            1: "ACTIVE", 2: "EXPIRED", 3: "BILLING_RETRY", 4: "BILLING_GRACE_PERIOD", 5: "REVOKED",
        ])
        for status in AppleSubscriptionStatus.allCases { #expect(AppleSubscriptionStatus(name: status.name) == status) }
        #expect(AppleSubscriptionStatus(name: "PAUSED") == nil)
    }
}
