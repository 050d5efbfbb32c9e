// SPDX-License-Identifier: Apache-2.0
public import Foundation
import Crypto

/// Checks Stripe's webhook signature: HMAC-SHA256 over `"{t}.{raw body}"` with each endpoint secret.
///
/// ```swift
/// let verifier = StripeSignatureVerifier(secrets: ["whsec_…"], toleranceSeconds: 300)
/// try verifier.verify(body: bytes, header: request.headers[stripeSignature], now: Date())
/// ```
public struct StripeSignatureVerifier: Sendable {
    private let keys: [SymmetricKey]
    public let toleranceSeconds: Int64

    /// - Parameters:
    ///   - secrets: the `whsec_…` endpoint secrets (the whole string is the HMAC key, as Stripe uses it);
    ///     any one may match, so a rotated and a new secret work side by side.
    ///   - toleranceSeconds: the largest accepted distance between `t` and now, in both directions.
    public init(secrets: [String], toleranceSeconds: Int64 = 300) {
        self.keys = secrets.map { SymmetricKey(data: Array($0.utf8)) }
        self.toleranceSeconds = toleranceSeconds
    }

    /// - Throws: ``Rejection``: `missing_signature`, `malformed_signature`, `expired` or `bad_signature`.
    public func verify<Body: Collection<UInt8>>(body: Body, header: String?, now: Date) throws(Rejection) {
        guard let header, !header.isEmpty else {
            throw Rejection(.missingSignature, "the Stripe-Signature header is missing")
        }
        let parsed = try StripeSignatureHeader(parsing: header[...])
        // `t` is whatever the sender wrote: a plain subtraction traps on t=-9223372036854775808.
        let (age, overflowed) = Int64(now.timeIntervalSince1970.rounded(.down)).subtractingReportingOverflow(parsed.timestamp)
        guard !overflowed, age <= toleranceSeconds, age >= -toleranceSeconds else {
            throw Rejection(.expired, "the Stripe-Signature timestamp is outside the \(toleranceSeconds)s tolerance")
        }
        // Well-formed entries only, and one HMAC per secret whatever the header holds: the header
        // is the sender's, so its size must not choose how much work an unauthenticated request costs.
        if !parsed.signatures.isEmpty {
            let prefix = Array("\(parsed.timestamp).".utf8)
            for key in keys {
                var hmac = HMAC<SHA256>(key: key)
                hmac.update(data: prefix)
                // The body in place when it is contiguous (a ByteBuffer's view is), without a copy.
                if body.withContiguousStorageIfAvailable({ hmac.update(data: UnsafeRawBufferPointer($0)) }) == nil {
                    hmac.update(data: Array(body))
                }
                let expected = hmac.finalize()
                // `==` on a MAC compares in constant time.
                for signature in parsed.signatures where expected == signature {
                    return
                }
            }
        }
        throw Rejection(.badSignature, "no v1 signature matches a configured secret")
    }
}
