// SPDX-License-Identifier: Apache-2.0
public import Foundation
import Crypto

/// Makes `Stripe-Signature` headers as Stripe does: `t={unix time},v1={hex HMAC-SHA256 of "{t}.{body}"}`.
public enum StripeSigner {
    /// - Parameters:
    ///   - body: the exact bytes that will be sent.
    ///   - secret: the `whsec_…` endpoint secret (the whole string is the key).
    ///   - timestamp: the signing time; now by default.
    public static func header(body: some DataProtocol, secret: String, timestamp: Date = Date()) -> String {
        let t = Int64(timestamp.timeIntervalSince1970)
        return "t=\(t),v1=\(signature(body: body, secret: secret, t: t))"
    }

    /// The lower-case hex `v1` value.
    public static func signature(body: some DataProtocol, secret: String, t: Int64) -> String {
        var message = Data("\(t).".utf8)
        message.append(contentsOf: body)
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Data(secret.utf8)))
        return mac.map { String(format: "%02x", $0) }.joined()
    }
}
