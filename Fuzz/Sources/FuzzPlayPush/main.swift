// SPDX-License-Identifier: Apache-2.0
// Fuzzes a Google Play push as ingest reads it: the Authorization header's bearer token (the JWT's
// three parts, base64url, its JSON header, alg and kid, the key lookup, the RS256 check and the
// claims) and the Pub/Sub body (the push's JSON, message.data's base64, the DeveloperNotification
// inside and its kind). Input: the header line, a newline, then the body.
import CryptoExtras
import Foundation
import FuzzSupport
import Shared

/// One fixed 2048-bit RSA public key. It is read, not generated: swift-crypto's key generation
/// leaks a 16-byte BIGNUM (CryptoExtras `withBignumPointer`), which the leak checker would report.
let fuzzKey = try! _RSA.Signing.PublicKey(pemRepresentation: """
    -----BEGIN PUBLIC KEY-----
    MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAtB/bAhifYiwhUysogkn7
    FLi434/b8ijACLL0jeqwuEhXzrvjPF6WbGPrdHWQTOLIdjTpqhYQoufML5QkVrpm
    hE8CWtDcKjcY87qy3YUGFEPdimm892tXNxMdKatYZzZZ6OK+UarC24HsZGUgdPS/
    Pulk7nFGezPn4bx29FvKGu7yrP3EmJea++iADAgGsUl38toJxlnf8ZKi3qvlrjib
    /vHMEUXoMsZ2hkkqHbgvhfp/8H+NifksrIpOsRpe3xXLpYa9ajX1JJN+rPiyURH4
    35YYxMfLVF2F/Yzd+XWFmfK6FWc+dtghkE2PSK0S1pO2GrvnZKTiIu0+t46ZpWOy
    uQIDAQAB
    -----END PUBLIC KEY-----
    """)

/// A verifier whose key set is fixed, that key under the kid `fuzz` (the seeds' kid): a token
/// naming it has its signature checked; any other kid is looked up and refused, never fetched.
let verifier = PlayPushVerifier(
    authentication: GooglePushAuthentication(
        audience: "https://sluice.example.com/v1/webhooks/google-play", serviceAccount: "push@example.iam.gserviceaccount.com",
        keys: GoogleSigningKeys { (keys: ["fuzz": fuzzKey], maxAge: 3_600) }),
    packageNames: ["com.example.sluice"])

// The key set fetched once, before fuzzing: it is kept for the process, as ingest keeps it.
runBlocking { _ = try? await verifier.authentication.verify(authorization: "Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6ImZ1enoifQ.e30.c2ln") }

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
