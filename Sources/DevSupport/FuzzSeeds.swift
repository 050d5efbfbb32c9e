// SPDX-License-Identifier: Apache-2.0
public import Foundation
import SwiftASN1

/// The seed corpus of the fuzz targets under `Fuzz/` (`sluice-dev fuzz-seeds` writes it): valid
/// inputs that reach deep into each parser, and a few near misses, all signed with the values
/// here, which the targets verify against.
public enum FuzzSeeds {
    /// The endpoint secret the Stripe seeds are signed with.
    public static let stripeSecret = "whsec_fuzz_only_not_a_real_secret"
    /// The `t=` of the Stripe seeds; the Stripe target's clock. (Apple seeds are signed at the
    /// time they are written, inside their test certificates' validity.)
    public static let timestamp: Int64 = 1_700_000_000
    /// The bundle id of the Apple seeds.
    public static let bundleID = "com.example.sluice"

    public static var now: Date { Date(timeIntervalSince1970: TimeInterval(timestamp)) }

    /// Writes `trust/root.pem` and one folder of seeds per target into `directory`.
    public static func write(to directory: URL) throws {
        let pki = try ApplePKI.generate(name: "Sluice Fuzz")
        let signer = AppleJWSSigner(pki: pki)
        try write(["root.pem": Data(pki.root.serializeAsPEM().pemString.utf8)], in: directory.appendingPathComponent("trust"))
        try write(try stripeSeeds(), in: directory.appendingPathComponent("FuzzStripeSignature"))
        let jws = try jwsSeeds(signer)
        try write(jws, in: directory.appendingPathComponent("FuzzCompactJWS"))
        try write(try chainSeeds(pki), in: directory.appendingPathComponent("FuzzX5CChain"))
        try write(try bodySeeds(signer, notification: jws["notification"]!), in: directory.appendingPathComponent("FuzzRequestBody"))
    }

    private static func stripeSeeds() throws -> [String: Data] {
        let body = try SampleStripeEvents.event(
            id: "evt_fuzz", type: "payment_intent.succeeded", created: now, object: SampleStripeEvents.paymentIntent(id: "pi_fuzz"))
        let signature = StripeSigner.signature(body: body, secret: stripeSecret, t: timestamp)
        func seed(_ header: String, _ body: Data = body) -> Data { Data((header + "\n").utf8) + body }
        return [
            "valid": seed("t=\(timestamp),v1=\(signature)"),
            "rotated": seed("t=\(timestamp),v1=\(String(repeating: "0", count: 64)),v0=abc,v1=\(signature.uppercased())"),
            "spaces": seed(" t = \(timestamp) , v1 = \(signature) "),
            "thin-event": seed("t=\(timestamp),v1=\(signature)", Data(#"{"id":"evt_1","object":"v2.core.event","type":"x","created":1}"#.utf8)),
            "no-timestamp": seed("v1=\(signature)"),
        ]
    }

    private static func jwsSeeds(_ signer: AppleJWSSigner) throws -> [String: Data] {
        let date = Date()
        let transaction = SampleAppleTransaction(
            transactionId: "2000000000000001", originalTransactionId: "2000000000000001", bundleId: bundleID,
            productId: "pro.monthly", type: "Auto-Renewable Subscription", environment: "Production",
            purchaseDate: date, expiresDate: date.addingTimeInterval(30 * 86_400), signedDate: date)
        let notification = SampleAppleNotification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: "00000000-0000-4000-8000-000000000001", bundleId: bundleID,
            environment: "Production", signedDate: date, signedTransactionInfo: try signer.sign(transaction))
        let payload = try JSONEncoder().encode(notification)
        return [
            "notification": Data(try signer.sign(json: payload).utf8),
            "transaction": Data(try signer.sign(transaction).utf8),
            "alg-none": Data(try signer.sign(json: payload, header: ["alg": "none"]).utf8),
            "x5u": Data(try signer.sign(json: payload, header: ["alg": "ES256", "x5u": "https://example.invalid/chain.pem"]).utf8),
        ]
    }

    /// Leaf, intermediate and root, each after its two-byte length, then a 64-byte signature.
    private static func chainSeeds(_ pki: ApplePKI) throws -> [String: Data] {
        func framed(_ certificates: [[UInt8]]) -> Data {
            var seed = Data()
            for der in certificates {
                seed.append(contentsOf: [UInt8(der.count >> 8), UInt8(der.count & 0xFF)])
                seed.append(contentsOf: der)
            }
            return seed + Data(repeating: 0x5A, count: 64)
        }
        let leaf = try pki.leaf.derBytes(), intermediate = try pki.intermediate.derBytes(), root = try pki.root.derBytes()
        return ["chain": framed([leaf, intermediate, root]), "reversed": framed([intermediate, leaf, root])]
    }

    private static func bodySeeds(_ signer: AppleJWSSigner, notification: Data) throws -> [String: Data] {
        let transaction = SampleAppleTransaction(
            transactionId: "2000000000000002", originalTransactionId: "2000000000000002", bundleId: bundleID,
            productId: "pro.lifetime", type: "Non-Consumable", environment: "Production",
            purchaseDate: Date(), signedDate: Date())
        let storeKit = try JSONSerialization.data(
            withJSONObject: ["signed_transaction": try signer.sign(transaction), "user_id": "user_fuzz"], options: [.sortedKeys])
        return [
            "notification": try JSONSerialization.data(withJSONObject: ["signedPayload": String(decoding: notification, as: UTF8.self)]),
            "storekit": storeKit,
            "stripe": try SampleStripeEvents.event(
                id: "evt_fuzz", type: "charge.refunded", created: now, object: ["id": "ch_1", "object": "charge"]),
            "nested": Data((String(repeating: "[", count: 64) + String(repeating: "]", count: 64)).utf8),
        ]
    }

    private static func write(_ files: [String: Data], in folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, contents) in files {
            try contents.write(to: folder.appendingPathComponent(name))
        }
    }
}
