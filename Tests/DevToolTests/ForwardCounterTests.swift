// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import Testing

@testable import DevTool

/// The sink's count of outgoing events, by which the end-to-end run judges "announced once": per
/// user, the distinct event ids of each type (a delivery repeated under its id is one event).
struct ForwardCounterTests {
    static func deliver(_ counter: ForwardCounter, type: String, id: String, user: String) {
        let owner = type == "balance.changed" ? "balance_transaction" : "entitlement"
        let body = #"{"id":"\#(id)","type":"\#(type)","data":{"\#(owner)":{"user_id":"\#(user)"}}}"#
        counter.recordEvent(body: ByteBuffer(string: body), id: id, timestamp: nil, signature: nil)
    }

    @Test func eachTypeIsCountedPerUserByDistinctID() {
        let counter = ForwardCounter()
        Self.deliver(counter, type: "entitlement.granted", id: "msg_1", user: "u1")
        Self.deliver(counter, type: "entitlement.granted", id: "msg_1", user: "u1")
        Self.deliver(counter, type: "balance.changed", id: "msg_2", user: "u1")
        Self.deliver(counter, type: "balance.changed", id: "msg_2", user: "u1")
        Self.deliver(counter, type: "balance.changed", id: "msg_3", user: "u1")
        Self.deliver(counter, type: "balance.changed", id: "msg_4", user: "u2")
        Self.deliver(counter, type: "entitlement.renewed", id: "msg_5", user: "u2")
        #expect(counter.grantsByUser == ["u1": ["msg_1"]])
        #expect(counter.balanceChangesByUser == ["u1": ["msg_2", "msg_3"], "u2": ["msg_4"]])
        #expect(counter.rejectedEventCount == 0)
    }

    @Test func anEventWhoseIDIsNotItsHeadersIsRejected() {
        let counter = ForwardCounter()
        let body = #"{"id":"msg_1","type":"balance.changed","data":{"balance_transaction":{"user_id":"u1"}}}"#
        counter.recordEvent(body: ByteBuffer(string: body), id: "msg_other", timestamp: nil, signature: nil)
        #expect(counter.balanceChangesByUser.isEmpty && counter.rejectedEventCount == 1)
    }

    @Test func aSignedCounterRefusesAnUnsignedEvent() {
        let counter = ForwardCounter(eventsSecret: "whsec_" + Data("secret".utf8).base64EncodedString())
        Self.deliver(counter, type: "balance.changed", id: "msg_1", user: "u1")
        #expect(counter.balanceChangesByUser.isEmpty && counter.rejectedEventCount == 1)
    }

    @Test(arguments: [
        ("credits=100", "credits", 100), ("gems=1", "gems", 1),
        ("credits", nil, nil), ("credits=0", nil, nil), ("credits=-5", nil, nil), ("=100", nil, nil), ("credits=1=2", nil, nil),
        ("credits=ten", nil, nil),
    ] as [(String, String?, Int64?)])
    func theGrantIsACurrencyAndAPositiveAmount(text: String, currency: String?, amount: Int64?) {
        let grant = EndToEndCommand.grant(text)
        #expect(grant?.currency == currency && grant?.amount == amount, "\(text)")
    }
}
