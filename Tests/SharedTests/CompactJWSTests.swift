// SPDX-License-Identifier: Apache-2.0
@testable import Shared
import Testing
import TestSupport

/// The worker's payload-only read of a stored JWS against the full parse ingest verifies with.
struct CompactJWSTests {
    @Test(arguments: [
        "apple/real/assn-v2-TEST-production-2024-10-17.jws", "apple/real/signedRenewalInfo-sandbox-2023-05-23.jws",
        "apple/mock_signed_data/testNotification.jws", "apple/mock_signed_data/transactionInfo.jws",
    ])
    func thePayloadAloneIsTheFullParsesPayload(file: String) throws {
        let compact = try Vectors.text(file)
        let payload = try CompactJWS.payload(of: compact)
        #expect(payload == (try CompactJWS(compact)).payload)
        #expect(payload.first == UInt8(ascii: "{"))
    }

    @Test(arguments: [
        ("a.b", "a JWS has three dot-separated parts"), (".b.c", "a JWS has three dot-separated parts"),
        ("a..c", "a JWS has three dot-separated parts"), ("a.b.c.d", "a JWS has three dot-separated parts"),
        ("a.b+/.c", "a JWS part is not base64url"), ("a.b=.c", "a JWS part is not base64url"),
    ])
    func aPayloadThatCannotBeReadIsMalformed(compact: String, message: String) {
        #expect(throws: Rejection(.malformed, message)) { try CompactJWS.payload(of: compact) }
    }
}
