// SPDX-License-Identifier: Apache-2.0
// Fuzzes what ingest does with a Stripe request before anything is stored: the `Stripe-Signature`
// header parser, the HMAC check and, when it verifies, the event envelope decoder.
// Input: header line, "\n", body.
import Foundation
import FuzzSupport
import NIOCore
import Shared

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(UnsafeRawBufferPointer(fuzzInput: data, size))
    let header = String(decoding: input.take(until: UInt8(ascii: "\n")), as: UTF8.self)
    let body = input.takeRest()
    _ = try? StripeSignatureHeader(parsing: header[...])
    // A rejection is the expected outcome for almost every input; only a crash is a finding.
    if (try? FuzzFixtures.stripeVerifier.verify(body: body, header: header, now: FuzzFixtures.now)) != nil {
        _ = try? StripeEventEnvelope.decode(ByteBuffer(bytes: body))
    }
    return 0
}

exit(FuzzDriver.run(fuzzOneInput))
