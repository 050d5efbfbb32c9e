// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing
import TestSupport
@testable import Worker

/// An outgoing event's body is written by hand (``JSONTextWriter``) from the members the read
/// API's bodies list once; these are the bytes `JSONEncoder` with sorted keys writes for the same
/// members, and what a receiver parses is the event's state, before and after.
struct OutgoingEventBodyTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000.5)
    static let id = UUID(uuidString: "00000000-0000-0000-0000-0000000000e1")!

    static func announcer(_ cause: EventCause) -> ChangeAnnouncer {
        ChangeAnnouncer(
            cause: cause, causeEventID: 7, leeway: 0, sandboxAccess: .anybody, writer: OutgoingEventWriter(logger: TestDatabase.logger),
            now: now)
    }

    static var entitlement: EntitlementState {
        // Strings a writer must escape, and a part of the offer left unknown.
        var state = EntitlementState(
            entityKey: "apple:production:100", userID: "user \"a\"\n/é\u{8}\u{C}\u{1}\t", productID: "pro\\yearly", productType: .autoRenewable,
            source: .storeKit, status: .active)
        state.expiresAt = now.addingTimeInterval(86_400)
        state.offerType = "introductory"
        state.isTrial = true
        return state
    }

    static var events: [OutgoingEvent] {
        var refunded = TransactionState(source: .webCheckout, providerTransactionID: "pi_1", environment: .sandbox, status: .refunded)
        refunded.amount = 1_999
        refunded.amountRefunded = 1_999
        refunded.currency = "usd"
        var before = refunded
        before.status = .succeeded
        before.amountRefunded = nil
        let webhook = announcer(EventCause(provider: "apple", eventType: "DID_RENEW", eventID: "n1", origin: .webhook))
        let clock = announcer(EventCause(provider: "apple", origin: .clock))
        var previous = entitlement
        previous.status = .gracePeriod
        return [
            webhook.event(.entitlementGranted, entitlement: entitlement, id: id, previous: nil),
            clock.event(.entitlementRenewed, entitlement: entitlement, id: id, previous: previous),
            webhook.event(.transactionRefunded, transaction: refunded, id: id, previous: before),
            clock.event(.transactionRefunded, transaction: refunded, id: id, previous: nil),
        ]
    }

    /// The same members, through `Encodable`.
    struct Reference: Encodable {
        let members: [JSONTextMember]
        func encode(to encoder: any Encoder) throws { try JSONTextMember.encode(members, to: encoder) }
    }

    @Test(arguments: 0..<4)
    func theBodyIsWhatJSONEncoderWritesWithSortedKeys(index: Int) throws {
        let event = Self.events[index]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let reference = try encoder.encode(Reference(members: event.bodyMembers))
        #expect(String(decoding: Data("{".utf8) + event.renderedTail(), as: UTF8.self) == String(decoding: reference, as: UTF8.self))
    }

    @Test func anEntitlementEventCarriesTheStateItsUserAndThePreviousState() throws {
        let body = try #require(try JSONSerialization.jsonObject(with: Data("{".utf8) + Self.events[1].renderedTail()) as? [String: Any])
        #expect(body["type"] as? String == "entitlement.renewed")
        #expect(body["occurred_at"] as? String == "2026-09-21T14:13:20Z")
        let cause = try #require(body["cause"] as? [String: Any])
        #expect(cause["origin"] as? String == "clock" && cause["provider"] as? String == "apple")
        #expect(cause["event_type"] is NSNull && cause["event_id"] is NSNull, "null for the clock, as docs/webhooks.md says")
        let data = try #require(body["data"] as? [String: Any])
        let entitlement = try #require(data["entitlement"] as? [String: Any])
        #expect(entitlement["user_id"] as? String == "user \"a\"\n/é\u{8}\u{C}\u{1}\t")
        #expect(entitlement["product_id"] as? String == "pro\\yearly")
        #expect(entitlement["is_trial"] as? Bool == true)
        #expect(entitlement["offer"] as? [String: String] == ["type": "introductory"], "a part not known is left out")
        #expect(entitlement["renews_into_product_id"] is NSNull)
        let previous = try #require(data["previous"] as? [String: Any])
        #expect(previous["status"] as? String == "grace_period")
        #expect(Set(previous.keys) == ["status", "is_active", "user_id"])
    }

    @Test func aTransactionEventCarriesItsAmountsAndThePreviousStatus() throws {
        let body = try #require(try JSONSerialization.jsonObject(with: Data("{".utf8) + Self.events[2].renderedTail()) as? [String: Any])
        let data = try #require(body["data"] as? [String: Any])
        let transaction = try #require(data["transaction"] as? [String: Any])
        #expect(transaction["amount_refunded"] as? Int == 1_999 && transaction["currency"] as? String == "usd")
        #expect(transaction["status"] as? String == "refunded")
        let previous = try #require(data["previous"] as? [String: Any])
        #expect(previous["status"] as? String == "succeeded" && previous["amount_refunded"] is NSNull)
        let first = try #require(try JSONSerialization.jsonObject(with: Data("{".utf8) + Self.events[3].renderedTail()) as? [String: Any])
        #expect((first["data"] as? [String: Any])?["previous"] is NSNull)
    }
}
