// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// What an Apple transaction and renewal info say of a subscription beyond its status, and Apple's
/// codes for it in the read API's words.
extension AppleDecider {
    /// Takes what the subscription's newest transaction says: product, expiry, offer, ownership.
    static func take(_ tx: AppleTransactionPayload, productID: String, into entitlement: inout EntitlementState) {
        entitlement.productID = productID
        if let expires = tx.expiresDate { entitlement.expiresAt = expires }
        entitlement.offer = tx.offerIdentifier
        entitlement.offerType = tx.offerType.flatMap(offerTypeName)
        if let ownership = tx.inAppOwnershipType.flatMap(ownership) { entitlement.ownership = ownership }
    }

    /// Takes the renewal fields from the event's renewal info when it is newer than the renewal
    /// info they came from (Apple's `signedDate`); older renewal info changes nothing.
    ///
    /// - Returns: whether it was taken.
    static func takeRenewal(_ event: Event, into entitlement: inout EntitlementState) -> Bool {
        guard let renewal = event.renewal, changesState(event.type) else { return false }
        let signed = renewal.signedDate ?? event.time
        if let taken = entitlement.renewalInfoSignedAt, signed.millisecondsSince1970 < taken.millisecondsSince1970 { return false }
        entitlement.renewalInfoSignedAt = signed
        if let status = renewal.autoRenewStatus {
            let willRenew = status != 0
            if willRenew {
                entitlement.cancelledAt = nil
            } else if entitlement.willRenew != false {
                entitlement.cancelledAt = entitlement.cancelledAt ?? event.time
            }
            entitlement.willRenew = willRenew
        }
        let next = renewal.autoRenewProductId
        entitlement.pendingProductID = next == entitlement.productID ? nil : next
        entitlement.gracePeriodExpiresAt = renewal.gracePeriodExpiresDate
        if renewal.isInBillingRetryPeriod == true {
            entitlement.billingIssueDetectedAt = entitlement.billingIssueDetectedAt ?? event.time
        } else if renewal.isInBillingRetryPeriod == false {
            entitlement.billingIssueDetectedAt = nil
        }
        entitlement.priceIncreaseStatus = renewal.priceIncreaseStatus.map { $0 == 0 ? .pending : .accepted }
        if let intent = renewal.expirationIntent {
            entitlement.expirationReason = expirationReason(intent: intent)
        }
        return true
    }

    /// `EXPIRED`'s subtype.
    static func expirationReason(subtype: AppleSubtype) -> ExpirationReason? {
        switch subtype {
        case .voluntary: .voluntary
        case .billingRetry: .billingError
        case .priceIncrease: .priceIncrease
        case .productNotForSale: .productUnavailable
        default: nil
        }
    }

    /// Renewal info `expirationIntent`.
    static func expirationReason(intent: Int) -> ExpirationReason {
        switch intent {
        case 1: .voluntary
        case 2: .billingError
        case 3: .priceIncrease
        case 4: .productUnavailable
        default: .other
        }
    }

    /// `offerType`.
    static func offerTypeName(_ type: Int) -> String? {
        switch type {
        case 1: "introductory"
        case 2: "promotional"
        case 3: "offer_code"
        case 4: "win_back"
        default: nil
        }
    }

    /// `inAppOwnershipType`.
    static func ownership(_ type: String) -> Ownership? {
        switch type {
        case "PURCHASED": .purchased
        case "FAMILY_SHARED": .familyShared
        default: nil
        }
    }
}
