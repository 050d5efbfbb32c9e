// SPDX-License-Identifier: Apache-2.0
// Fuzzes the request body JSON of every ingest endpoint — the Stripe event envelope, the App
// Store notification body and the StoreKit sync body, with everything nested in them — and the
// worker's decoding of stored Apple bodies. Input: the body. The Stripe envelope's fast path must
// read any body it reads exactly as JSONDecoder does; a difference is a finding.
import Foundation
import FuzzSupport
import NIOCore
@_spi(Testing) import Shared

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(fuzzInput: data, size)
    let body = ByteBuffer(bytes: bytes)
    _ = try? StripeEventEnvelope.decode(body)
    if let skimmed = StripeEventEnvelope.skimmed(body), skimmed != StripeEventEnvelope.decodedByJSONDecoder(body) {
        fatalError("the envelope's skim read \(skimmed), JSONDecoder \(String(describing: StripeEventEnvelope.decodedByJSONDecoder(body)))")
    }
    _ = try? AppleSignedPayloadDecoder.notification(body: Data(bytes))
    _ = try? AppleSignedPayloadDecoder.storeKitSync(body: Data(bytes))
    runBlocking {
        _ = try? await FuzzFixtures.appleVerifier.verifyNotification(body: body, sandbox: false)
        _ = try? await FuzzFixtures.appleVerifier.verifyStoreKitTransaction(body: body)
    }
    return 0
}

exit(FuzzDriver.run(fuzzOneInput))
