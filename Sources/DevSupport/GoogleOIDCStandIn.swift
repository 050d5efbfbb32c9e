// SPDX-License-Identifier: Apache-2.0
import Crypto
public import CryptoExtras
public import Foundation
import HTTPTypes
public import Hummingbird
import NIOCore
import NIOFoundationCompat
import Shared
import Synchronization

/// Google's side of an authenticated Pub/Sub push, built from Google's documentation: the JSON Web
/// Key Set Google publishes at `/oauth2/v3/certs` (RSA keys by `kid`, `alg` RS256, `use` sig,
/// served with `Cache-Control: public, max-age=…`), and the OIDC ID tokens Pub/Sub signs with them
/// (`iss` `https://accounts.google.com`, `aud`, `email`, `email_verified`, `iat`, `exp` an hour on).
///
/// Keys rotate as Google's do: ``rotate()`` publishes a new key beside the old.
public final class GoogleOIDCStandIn: Sendable {
    public struct SigningKey: Sendable {
        public var kid: String
        public var key: _RSA.Signing.PrivateKey

        public init(kid: String, key: _RSA.Signing.PrivateKey) {
            self.kid = kid
            self.key = key
        }
    }

    private struct State {
        var published: [SigningKey]
        var fetches = 0
        var maxAge = 3_600
        var failing = false
    }

    private let state: Mutex<State>
    public static let certsPath = "/oauth2/v3/certs"

    public init() throws {
        state = Mutex(State(published: [try Self.newKey()]))
    }

    public static func newKey() throws -> SigningKey {
        SigningKey(kid: UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""), key: try _RSA.Signing.PrivateKey(keySize: .bits2048))
    }

    /// How many times the key set was fetched.
    public var fetches: Int { state.withLock { $0.fetches } }

    /// The key new tokens are signed with: the newest published.
    public var currentKey: SigningKey { state.withLock { $0.published.last! } }

    /// Publishes a new key beside the old ones and returns it.
    @discardableResult
    public func rotate() throws -> SigningKey {
        let key = try Self.newKey()
        state.withLock { $0.published.append(key) }
        return key
    }

    /// Whether the key set endpoint answers `503` (an outage).
    public func setFailing(_ failing: Bool) { state.withLock { $0.failing = failing } }

    /// The `max-age` the key set is served with.
    public func setMaxAge(_ seconds: Int) { state.withLock { $0.maxAge = seconds } }

    /// An ID token as Pub/Sub sends it; every claim may be overridden or removed (`nil`).
    public func idToken(
        audience: String, email: String, emailVerified: Bool = true, issuer: String = "https://accounts.google.com",
        issuedAt: Date = Date(), lifetime: TimeInterval = 3_600, key: SigningKey? = nil, algorithm: String = "RS256",
        extraClaims: [String: any Sendable] = [:]
    ) throws -> String {
        let key = key ?? currentKey
        var claims: [String: any Sendable] = [
            "iss": issuer, "aud": audience, "azp": "1122334455", "sub": "1122334455", "email": email, "email_verified": emailVerified,
            "iat": Int64(issuedAt.timeIntervalSince1970), "exp": Int64(issuedAt.addingTimeInterval(lifetime).timeIntervalSince1970),
        ]
        claims.merge(extraClaims) { $1 }
        return try Self.sign(header: ["alg": algorithm, "kid": key.kid, "typ": "JWT"], claims: claims, key: key.key)
    }

    /// A compact RS256 JWS of `claims`.
    public static func sign(header: [String: any Sendable], claims: [String: any Sendable], key: _RSA.Signing.PrivateKey) throws -> String {
        let headerJSON = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        let claimsJSON = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        let input = Base64URL.encode(headerJSON) + "." + Base64URL.encode(claimsJSON)
        let signature = try key.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// The key set as Google serves it.
    public func keySetJSON() throws -> Data {
        let keys = try state.withLock { $0.published }.map { signing -> [String: String] in
            let primitives = try signing.key.publicKey.getKeyPrimitives()
            return [
                "kty": "RSA", "alg": "RS256", "use": "sig", "kid": signing.kid,
                "n": Base64URL.encode(primitives.modulus), "e": Base64URL.encode(primitives.publicExponent),
            ]
        }
        return try JSONSerialization.data(withJSONObject: ["keys": keys], options: [.sortedKeys])
    }

    /// `GET /oauth2/v3/certs`, added to `router`.
    public func addRoutes(to router: Router<BasicRequestContext>) {
        router.get(RouterPath(stringLiteral: Self.certsPath)) { _, _ -> Response in
            let (failing, maxAge) = self.state.withLock { state in
                state.fetches += 1
                return (state.failing, state.maxAge)
            }
            guard !failing else { return Response(status: .serviceUnavailable) }
            return Response(
                status: .ok,
                headers: [.contentType: "application/json; charset=UTF-8", .cacheControl: "public, max-age=\(maxAge), must-revalidate, no-transform"],
                body: .init(byteBuffer: ByteBuffer(data: try self.keySetJSON())))
        }
    }
}
