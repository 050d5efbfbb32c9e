// SPDX-License-Identifier: Apache-2.0
// Fuzzes the JWS compact form and its JSON header: splitting, base64url, header decoding, the
// alg and x5c checks and the payload decoder, through the verifier ingest uses and the decoder
// the worker uses on stored payloads. Input: the compact JWS text.
import Foundation
import FuzzSupport
import Shared

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let compact = String(decoding: UnsafeRawBufferPointer(fuzzInput: data, size), as: UTF8.self)
    _ = try? AppleSignedPayloadDecoder.decode(compact, as: AppleTransactionPayload.self)
    runBlocking {
        _ = try? await AppleJWSVerifier(chainVerifier: FuzzFixtures.chainVerifier).verify(compact, as: AppleNotificationPayload.self)
    }
    return 0
}

exit(FuzzDriver.run(fuzzOneInput))
