// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Shared

/// The console's session cookie and CSRF token, signed with a secret derived from the operator key
/// that logged in, so removing a key from `OPERATOR_KEYS` ends its sessions. Whether a session is
/// still live (not signed out, not idle) is the database's to say (``ConsoleSessions``), so every
/// console replica agrees.
///
/// A cookie is `<expiry>.<nonce>.<mac>`: expiry in Unix seconds, 16 random bytes, and
/// HMAC-SHA256 over both (base64url). The CSRF token of a session is an HMAC of its nonce, so a
/// form is only accepted with the token of the session that posts it.
struct ConsoleSessionToken: Sendable, Equatable {
    /// The session lifetime.
    static let lifetime: TimeInterval = 12 * 3_600

    var expiry: Int64
    var nonce: String
    /// Which operator key signed it (its position in `OPERATOR_KEYS`).
    var keyIndex: Int

    /// A new session for the key at `keyIndex`, as a cookie value.
    static func issue(keyIndex: Int, keys: OperatorKeys, now: Date) -> (token: ConsoleSessionToken, cookie: String) {
        let nonce = base64url(SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) })
        let token = ConsoleSessionToken(expiry: Int64(now.timeIntervalSince1970 + lifetime), nonce: nonce, keyIndex: keyIndex)
        let body = "\(token.expiry).\(nonce)"
        return (token, body + "." + base64url(mac(body, keys.sessionSecrets[keyIndex])))
    }

    /// The session a cookie holds, if one of the keys signed it and it has not expired.
    static func verify(_ cookie: String, keys: OperatorKeys, now: Date) -> ConsoleSessionToken? {
        let parts = cookie.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let expiry = Int64(parts[0]), parts[1].count == 22,
            let presented = Base64URL.decode(parts[2])
        else { return nil }
        let body = "\(parts[0]).\(parts[1])"
        var found: Int?
        for (index, secret) in keys.sessionSecrets.enumerated()
        where OperatorKeys.equal(Array(mac(body, secret)), presented) {
            found = found ?? index
        }
        guard let keyIndex = found, Double(expiry) > now.timeIntervalSince1970 else { return nil }
        return ConsoleSessionToken(expiry: expiry, nonce: String(parts[1]), keyIndex: keyIndex)
    }

    /// The CSRF token every form of this session carries.
    func csrfToken(keys: OperatorKeys) -> String {
        Self.base64url(Self.mac("csrf." + nonce, keys.sessionSecrets[keyIndex]))
    }

    /// Whether `presented` is this session's CSRF token (compared in constant time).
    func acceptsCSRF(_ presented: String?, keys: OperatorKeys) -> Bool {
        guard let presented else { return false }
        return OperatorKeys.equal(Array(csrfToken(keys: keys).utf8), Array(presented.utf8))
    }

    private static func mac(_ text: String, _ secret: SymmetricKey) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: secret))
    }

    static func base64url(_ data: Data) -> String { Base64URL.encode(data) }
}

