// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

/// The `Stripe-Signature` header is bounded before any HMAC is computed.
struct StripeSignatureHeaderTests {
    static let hex = String(repeating: "ab", count: 32)

    @Test(arguments: [
        ("t=1,v1=\(hex)", 1), ("t=1,v1=\(hex),v1=\(hex.uppercased())", 2), ("t=1,v1=abcd,v1=\(hex)", 1),
        ("t=1,v1=\(hex)ab", 0), ("t=1,v1=,v1=\(String(repeating: "zz", count: 32))", 0), ("t=1,v0=\(hex),v1=\(hex)", 1),
    ])
    func onlyHexHMACsAreKept(header: String, kept: Int) throws {
        let parsed = try StripeSignatureHeader(parsing: header[...])
        #expect(parsed.signatures.count == kept)
        #expect(parsed.signatures.allSatisfy { $0.count == 32 })
    }

    @Test func moreThanSixteenEntriesIsMalformed() throws {
        let sixteen = "t=1," + Array(repeating: "v1=\(Self.hex)", count: 15).joined(separator: ",")
        #expect(try StripeSignatureHeader(parsing: sixteen[...]).signatures.count == 15)
        #expect(throws: Rejection(.malformedSignature, "Stripe-Signature has more than 16 entries")) {
            try StripeSignatureHeader(parsing: (sixteen + ",v0=x")[...])
        }
    }

    @Test func malformedValuesAreABadSignatureAndNoValueIsMalformed() throws {
        let verifier = StripeSignatureVerifier(secrets: ["whsec_a", "whsec_b"], toleranceSeconds: 300)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(throws: Rejection(.badSignature, "no v1 signature matches a configured secret")) {
            try verifier.verify(body: Array("{}".utf8), header: "t=1700000000,v1=zz", now: now)
        }
        #expect(throws: Rejection(.malformedSignature, "Stripe-Signature has no v1 signature")) {
            try verifier.verify(body: Array("{}".utf8), header: "t=1700000000,v0=\(Self.hex)", now: now)
        }
    }
}
