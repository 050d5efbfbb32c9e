// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

@testable import Worker

/// What Sluice tells Apple about a refund request, as a table (docs/credits.md).
struct ConsumptionAnswerTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func paid(_ status: TransactionStatus = .succeeded) -> TransactionState {
        TransactionState(source: .storeKit, providerTransactionID: "1", environment: .production, status: status)
    }

    @Test(arguments: [
        // (granted, balance now, expected milliunits)
        (["credits": 500], ["credits": 200], 60_000), (["credits": 500], ["credits": 900], 0), (["credits": 500], [:], 100_000),
        (["credits": 500, "gems": 10], ["credits": 500, "gems": 5], 50_000), (["credits": 3], ["credits": 2], 33_333),
    ] as [([String: Int64], [String: Int64], Int)])
    func consumptionIsTheLargestShareOfTheGrantNoLongerHeld(granted: [String: Int64], balances: [String: Int64], expected: Int) {
        let purchase = ConsumptionAnswer.Purchase(transaction: Self.paid(), granted: granted, balances: balances)
        #expect(ConsumptionAnswer.consumed(purchase, now: Self.now) == expected)
    }

    /// Credits spent first in first out: the balance left is the newest credits'.
    @Test(arguments: [
        // (granted, balance now, arrived after the grant, expected milliunits)
        (["credits": 500], ["credits": 500], ["credits": 500], 100_000),  // all spent, then another pack bought
        (["credits": 500], ["credits": 700], ["credits": 500], 60_000),
        (["credits": 500], ["credits": 1_200], ["credits": 500], 0),  // older credits left: this grant untouched
        (["credits": 500], ["credits": 300], ["gems": 40], 40_000),  // another currency arrived: no bearing
        (["credits": 500, "gems": 10], ["credits": 900, "gems": 10], ["credits": 400, "gems": 10], 100_000),
    ] as [([String: Int64], [String: Int64], [String: Int64], Int)])
    func creditsThatArrivedAfterTheGrantAreSpentLast(
        granted: [String: Int64], balances: [String: Int64], arrived: [String: Int64], expected: Int
    ) {
        let purchase = ConsumptionAnswer.Purchase(transaction: Self.paid(), granted: granted, balances: balances, arrivedSince: arrived)
        #expect(ConsumptionAnswer.consumed(purchase, now: Self.now) == expected)
    }

    /// A grant that expires is left with what its lots hold, whatever the balance.
    @Test(arguments: [
        // (granted, what its lots hold, expected milliunits)
        (["credits": 1_000], ["credits": 1_000], 0),
        (["credits": 1_000], ["credits": 200], 80_000),
        (["credits": 1_000], [:], 100_000),  // spent in full, or expired
        (["credits": 1_000, "gems": 10], ["credits": 1_000, "gems": 5], 50_000),
    ] as [([String: Int64], [String: Int64], Int)])
    func anExpiringGrantIsLeftWithWhatItsLotsHold(granted: [String: Int64], lots: [String: Int64], expected: Int) {
        var purchase = ConsumptionAnswer.Purchase(transaction: Self.paid(), granted: granted, balances: ["credits": 5_000], arrivedSince: [:])
        purchase.grantLots = lots
        #expect(ConsumptionAnswer.consumed(purchase, now: Self.now) == expected)
    }

    @Test func aSubscriptionsConsumptionIsTheShareOfItsPeriodGone() {
        let purchase = ConsumptionAnswer.Purchase(
            transaction: Self.paid(), periodStart: Self.now.addingTimeInterval(-25 * 86_400), periodEnd: Self.now.addingTimeInterval(5 * 86_400))
        #expect(ConsumptionAnswer.consumed(purchase, now: Self.now) == 83_333)
        #expect(ConsumptionAnswer.consumed(.init(transaction: Self.paid()), now: Self.now) == nil, "nothing known: left out")
    }

    @Test(arguments: [
        (ConsumptionAnswer.Policy.none, ["credits": 500] as [String: Int64], nil as ConsumptionAnswer.RefundPreference?),
        (.decline, ["credits": 500], .decline), (.grantFull, [:], .grantFull), (.grantProrated, [:], .grantProrated),
        (.byConsumption, ["credits": 460], .grantFull), (.byConsumption, ["credits": 200], .decline), (.byConsumption, [:], .decline),
    ])
    func theRefundPreferenceFollowsThePolicy(policy: ConsumptionAnswer.Policy, balances: [String: Int64], expected: ConsumptionAnswer.RefundPreference?) throws {
        let purchase = ConsumptionAnswer.Purchase(transaction: Self.paid(), granted: ["credits": 500], balances: balances)
        let answer = try #require(ConsumptionAnswer.decide(purchase, policy: policy, sampleContentProvided: true, now: Self.now))
        #expect(answer.refundPreference == expected)
        #expect(answer.customerConsented && answer.sampleContentProvided && answer.deliveryStatus == .delivered)
    }

    @Test func aPurchaseInTheLedgerButNeverPaidIsNotDelivered() throws {
        for transaction in [Self.paid(.pending), Self.paid(.failed)] {
            let answer = try #require(ConsumptionAnswer.decide(.init(transaction: transaction), policy: .none, sampleContentProvided: false, now: Self.now))
            #expect(answer.deliveryStatus == .undeliveredOther && answer.consumptionPercentage == nil)
        }
    }

    /// With no ledger row Sluice cannot say whether the purchase was delivered: no answer, under
    /// any policy (an `UNDELIVERED_…` would argue for a refund on a guess).
    @Test(arguments: ConsumptionAnswer.Policy.allCases)
    func aPurchaseNotInTheLedgerIsNotAnswered(policy: ConsumptionAnswer.Policy) {
        let unknown = ConsumptionAnswer.Purchase(transaction: nil, granted: ["credits": 500], balances: ["credits": 100])
        #expect(ConsumptionAnswer.decide(unknown, policy: policy, sampleContentProvided: true, now: Self.now) == nil)
    }

    @Test func theBodyIsApplesConsumptionRequest() throws {
        let answer = ConsumptionAnswer(
            customerConsented: true, consumptionPercentage: 60_000, deliveryStatus: .delivered, refundPreference: .decline, sampleContentProvided: false)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(String(decoding: try encoder.encode(answer), as: UTF8.self)
            == #"{"consumptionPercentage":60000,"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"DECLINE","sampleContentProvided":false}"#)
        var unknown = answer
        unknown.consumptionPercentage = nil
        unknown.refundPreference = nil
        #expect(String(decoding: try encoder.encode(unknown), as: UTF8.self)
            == #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#, "left out, not null")
    }
}
