// SPDX-License-Identifier: Apache-2.0
import NIOCore
import Shared
import Testing

/// ``EventProof``: the HMAC that says Sluice stored a row.
struct EventProofTests {
    static let key = String(repeating: "k", count: 32)

    @Test func theSameRowHasTheSameProofAndEveryFieldCounts() throws {
        let proof = try EventProof(secret: Self.key)
        let base = proof.proof(source: "stripe", externalID: "evt_1", type: "charge.refunded", origin: "webhook", payload: ByteBuffer(string: "{}"))
        #expect(base.count == 32)
        #expect(base == proof.proof(source: "stripe", externalID: "evt_1", type: "charge.refunded", origin: "webhook", payload: ByteBuffer(string: "{}")))
        let variants = [
            proof.proof(source: "apple", externalID: "evt_1", type: "charge.refunded", origin: "webhook", payload: ByteBuffer(string: "{}")),
            proof.proof(source: "stripe", externalID: "evt_2", type: "charge.refunded", origin: "webhook", payload: ByteBuffer(string: "{}")),
            proof.proof(source: "stripe", externalID: "evt_1", type: "charge.succeeded", origin: "webhook", payload: ByteBuffer(string: "{}")),
            proof.proof(source: "stripe", externalID: "evt_1", type: "charge.refunded", origin: "recovery", payload: ByteBuffer(string: "{}")),
            proof.proof(source: "stripe", externalID: "evt_1", type: "charge.refunded", origin: "webhook", payload: ByteBuffer(string: "{ }")),
            // Fields run together differently: the lengths keep them apart.
            proof.proof(source: "stripeevt_1", externalID: "", type: "charge.refunded", origin: "webhook", payload: ByteBuffer(string: "{}")),
        ]
        #expect(variants.allSatisfy { $0 != base })
        #expect(Set(variants).count == variants.count)
        #expect(try EventProof(secret: String(repeating: "j", count: 32))
            .proof(source: "stripe", externalID: "evt_1", type: "charge.refunded", origin: "webhook", payload: ByteBuffer(string: "{}")) != base)
    }

    @Test func verificationTakesOnlyTheExactProof() throws {
        let proof = try EventProof(secret: Self.key)
        let payload = ByteBuffer(string: #"{"a":1}"#)
        let good = proof.proof(source: "apple", externalID: "n1", type: "DID_RENEW", origin: "webhook", payload: payload)
        #expect(proof.verifies(good, source: "apple", externalID: "n1", type: "DID_RENEW", origin: "webhook", payload: payload))
        var flipped = good
        flipped[31] ^= 1
        #expect(!proof.verifies(flipped, source: "apple", externalID: "n1", type: "DID_RENEW", origin: "webhook", payload: payload))
        #expect(!proof.verifies(Array(good.prefix(16)), source: "apple", externalID: "n1", type: "DID_RENEW", origin: "webhook", payload: payload))
        #expect(!proof.verifies([], source: "apple", externalID: "n1", type: "DID_RENEW", origin: "webhook", payload: payload))
    }

    @Test func duringARotationTheNewKeyProvesAndBothAreAccepted() throws {
        let old = String(repeating: "o", count: 32), new = String(repeating: "n", count: 32)
        let payload = ByteBuffer(string: "{}")
        let byOld = try EventProof(secret: old).proof(source: "apple", externalID: "n1", type: "T", origin: "webhook", payload: payload)
        let rotating = try EventProof(secret: "\(new),\(old)")
        let byNew = rotating.proof(source: "apple", externalID: "n1", type: "T", origin: "webhook", payload: payload)
        #expect(byNew == (try EventProof(secret: new)).proof(source: "apple", externalID: "n1", type: "T", origin: "webhook", payload: payload))
        #expect(rotating.verifies(byOld, source: "apple", externalID: "n1", type: "T", origin: "webhook", payload: payload))
        #expect(rotating.verifies(byNew, source: "apple", externalID: "n1", type: "T", origin: "webhook", payload: payload))
        #expect(!(try EventProof(secret: new)).verifies(byOld, source: "apple", externalID: "n1", type: "T", origin: "webhook", payload: payload))
    }

    @Test func aShortKeyIsRefused() {
        let error = #expect(throws: ConfigurationError.self) { try EventProof(secret: "short") }
        #expect(error?.variable == "EVENT_SIGNING_KEY")
        #expect(error?.description.contains("short") == false)
    }
}
