// SPDX-License-Identifier: Apache-2.0
// Fuzzes a Google Play push as ingest reads it: the Authorization header's bearer token (the JWT's
// three parts, base64url, its JSON header, alg and kid, the key lookup, the RS256 check and the
// claims) and the Pub/Sub body (the push's JSON, message.data's base64, the DeveloperNotification
// inside and its kind). Input: the header line, a newline, then the body.
import CryptoExtras
import Foundation
import FuzzSupport
import Shared

/// A verifier whose key set is fixed, one RSA key under the kid `fuzz` (the seeds' kid): a token
/// naming it has its signature checked; any other kid is looked up and refused, never fetched.
let verifier = PlayPushVerifier(
    authentication: GooglePushAuthentication(
        audience: "https://sluice.example.com/v1/webhooks/google-play", serviceAccount: "push@example.iam.gserviceaccount.com",
        keys: GoogleSigningKeys { (keys: ["fuzz": try _RSA.Signing.PrivateKey(keySize: .bits2048).publicKey], maxAge: 3_600) }),
    packageNames: ["com.example.sluice"])

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(UnsafeRawBufferPointer(fuzzInput: data, size))
    let header = String(decoding: input.take(until: UInt8(ascii: "\n")), as: UTF8.self)
    let body = Data(input.takeRest())
    runBlocking {
        _ = try? await verifier.authentication.verify(authorization: header)
    }
    // The body's checks, as they run once a token verified.
    if let push = try? JSONDecoder().decode(PlayPush.self, from: body), let notification = try? push.notification() {
        _ = notification.kind()
        _ = notification.eventTime
    }
    return 0
}

exit(FuzzDriver.run(fuzzOneInput))
