// SPDX-License-Identifier: Apache-2.0
public import Crypto
public import Foundation
import Synchronization

/// Bearer tokens of the App Store Server API: JWTs signed ES256 with the In-App Purchase key, one
/// per bundle id (`bid`), reused until five minutes before they expire.
///
/// Header `{"alg":"ES256","kid":…,"typ":"JWT"}`; claims `iss` (issuer id), `iat`, `exp` (20 minutes
/// later; Apple accepts at most 60), `aud` `appstoreconnect-v1`, `bid`.
public final class AppleAPIToken: Sendable {
    static let lifetime: TimeInterval = 20 * 60
    static let renewBefore: TimeInterval = 5 * 60

    private let keyID: String
    private let issuerID: String
    private let key: P256.Signing.PrivateKey
    private let cache = Mutex<[String: (token: String, expires: Date)]>([:])

    public init(keyID: String, issuerID: String, key: P256.Signing.PrivateKey) {
        self.keyID = keyID
        self.issuerID = issuerID
        self.key = key
    }

    /// A token for `bundleID`, new or cached.
    public func token(bundleID: String, now: Date = Date()) throws -> String {
        if let cached = cache.withLock({ $0[bundleID] }), cached.expires.timeIntervalSince(now) > Self.renewBefore {
            return cached.token
        }
        let issuedAt = Int64(now.timeIntervalSince1970)
        let expires = issuedAt + Int64(Self.lifetime)
        let header = try Self.json(["alg": "ES256", "kid": keyID, "typ": "JWT"])
        let claims = try Self.json([
            "iss": issuerID, "iat": issuedAt, "exp": expires, "aud": "appstoreconnect-v1", "bid": bundleID,
        ] as [String: any Sendable])
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = try key.signature(for: Data(signingInput.utf8))
        // JWS ES256 is the raw r‖s (64 bytes), not DER.
        let token = signingInput + "." + Base64URL.encode(signature.rawRepresentation)
        cache.withLock { $0[bundleID] = (token, Date(timeIntervalSince1970: TimeInterval(expires))) }
        return token
    }

    private static func json(_ object: [String: any Sendable]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }
}
