// SPDX-License-Identifier: Apache-2.0
// Fuzzes x5c certificate decoding and chain validation: three DER certificates (each preceded by
// its two-byte big-endian length) become the x5c of a JWS over a fixed, well-formed notification
// payload; the input's remaining bytes are its signature.
import Foundation
import FuzzSupport
import Shared

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(UnsafeRawBufferPointer(fuzzInput: data, size))
    let certificates = (0..<3).map { _ in Data(input.takeLengthPrefixed()).base64EncodedString() }
    let signature = Base64URL.encode(input.takeRest().prefix(64))
    guard let header = try? JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": certificates]) else { return 0 }
    let payload = #"{"notificationType":"TEST","notificationUUID":"fuzz","signedDate":\#(FuzzFixtures.appleSignedDateMilliseconds),"#
        + #""data":{"bundleId":"com.example.sluice","environment":"Production"}}"#
    let compact = Base64URL.encode(header) + "." + Base64URL.encode(Array(payload.utf8)) + "." + signature
    runBlocking {
        _ = try? await AppleJWSVerifier(chainVerifier: FuzzFixtures.chainVerifier).verify(compact, as: AppleNotificationPayload.self)
    }
    return 0
}

exit(FuzzDriver.run(fuzzOneInput))
