// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

/// Inputs that crashed a parser (found by the fuzz targets under `Fuzz/` or while writing them),
/// kept as tests so they never come back. Each is also in the fuzz seed corpus.
struct FuzzRegressionTests {
    static let verifier = StripeSignatureVerifier(secrets: ["whsec_regression"], toleranceSeconds: 300)

    /// `now - t` trapped on integer overflow for the most negative `t`, which killed `ingest` on an
    /// unauthenticated request. Every extreme timestamp is now just outside the tolerance.
    @Test(arguments: ["-9223372036854775808", "-9223372036854775807", "9223372036854775807", "-1"])
    func anExtremeStripeTimestampIsExpiredNotACrash(timestamp: String) throws {
        #expect(throws: Rejection(.expired, "the Stripe-Signature timestamp is outside the 300s tolerance")) {
            try Self.verifier.verify(body: Array("{}".utf8), header: "t=\(timestamp),v1=00", now: Date(timeIntervalSince1970: 1_700_000_000))
        }
    }
}
