// SPDX-License-Identifier: Apache-2.0
// Fuzzes the request body JSON of every ingest endpoint — the Stripe event envelope, the App
// Store notification body and the StoreKit sync body, with everything nested in them — and the
// worker's decoding of stored Apple bodies. Input: the body.
import Foundation
import FuzzSupport
import NIOCore
import Shared

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(fuzzInput: data, size)
    let body = ByteBuffer(bytes: bytes)
    _ = try? StripeEventEnvelope.decode(body)
    _ = try? AppleSignedPayloadDecoder.notification(body: Data(bytes))
    _ = try? AppleSignedPayloadDecoder.storeKitSync(body: Data(bytes))
    runBlocking {
        _ = try? await FuzzFixtures.appleVerifier.verifyNotification(body: body, sandbox: false)
        _ = try? await FuzzFixtures.appleVerifier.verifyStoreKitTransaction(body: body)
    }
    return 0
}

exit(FuzzDriver.run(fuzzOneInput))
