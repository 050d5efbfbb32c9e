// SPDX-License-Identifier: Apache-2.0
import Crypto
import CryptoExtras
public import Foundation

/// The check of an authenticated Pub/Sub push: the `Authorization: Bearer` token is an OIDC ID
/// token Google signed (RS256, a key of Google's published set by `kid`), issued by Google
/// (`accounts.google.com`), for `GOOGLE_PUSH_AUDIENCE`, on behalf of the push subscription's
/// service account (`email` = `GOOGLE_PUSH_SERVICE_ACCOUNT`, `email_verified`), and not expired.
public struct GooglePushAuthentication: Sendable {
    /// The ID token's claims Sluice checks.
    struct Claims: Decodable {
        var iss: String?
        var aud: Audience?
        var email: String?
        var emailVerified: Bool?
        var exp: Double?
        var iat: Double?

        enum CodingKeys: String, CodingKey {
            case iss, aud, email, exp, iat
            case emailVerified = "email_verified"
        }
    }

    /// `aud`: one string, or (per RFC 7519) an array of them.
    struct Audience: Decodable {
        var values: [String]

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) {
                values = [one]
            } else {
                values = try container.decode([String].self)
            }
        }
    }

    /// The issuers Google's ID tokens carry.
    static let issuers: Set<String> = ["accounts.google.com", "https://accounts.google.com"]
    /// How far the token's clock may be from Sluice's.
    static let clockSkew: TimeInterval = 300

    public let audience: String
    public let serviceAccount: String
    let keys: GoogleSigningKeys

    public init(audience: String, serviceAccount: String, keys: GoogleSigningKeys) {
        self.audience = audience
        self.serviceAccount = serviceAccount
        self.keys = keys
    }

    /// Verifies the `Authorization` header's token at `now`.
    ///
    /// - Throws: ``Rejection``: `missing_token`, `bad_token`, `unsupported_algorithm`, `unknown_key`,
    ///   `bad_signature`, `wrong_issuer`, `wrong_audience`, `wrong_account`, `expired` (each `401`),
    ///   or `keys_unavailable` (`503`: Pub/Sub pushes again).
    public func verify(authorization: String?, now: Date = Date()) async throws(Rejection) {
        guard let authorization, authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            throw Rejection(.missingToken, "the push carries no Authorization: Bearer token")
        }
        let token: CompactJWS
        do {
            token = try CompactJWS(String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces))
        } catch {
            throw Rejection(.badToken, "the bearer token is not a compact JWT")
        }
        guard token.header.alg == "RS256" else {
            throw Rejection(.unsupportedAlgorithm, "the token's alg is \(token.header.alg.prefix(16)), not RS256")
        }
        guard let kid = token.header.kid, !kid.isEmpty else {
            throw Rejection(.badToken, "the token's header names no kid")
        }
        let key = try await keys.key(kid, now: { now })
        let signature = _RSA.Signing.RSASignature(rawRepresentation: token.signature)
        guard key.isValidSignature(signature, for: SHA256.hash(data: token.signingInput), padding: .insecurePKCS1v1_5) else {
            throw Rejection(.badSignature, "the token's signature does not verify with Google's key")
        }
        let claims: Claims
        do {
            claims = try JSONDecoder().decode(Claims.self, from: Data(token.payload))
        } catch {
            throw Rejection(.badToken, "the token's claims are not a JSON object of the documented types")
        }
        try check(claims, now: now)
    }

    /// The claims' checks, after the signature.
    func check(_ claims: Claims, now: Date) throws(Rejection) {
        guard let issuer = claims.iss, Self.issuers.contains(issuer) else {
            throw Rejection(.wrongIssuer, "the token was not issued by Google")
        }
        guard let audiences = claims.aud?.values, audiences.contains(audience) else {
            throw Rejection(.wrongAudience, "the token's aud is not GOOGLE_PUSH_AUDIENCE")
        }
        guard claims.email == serviceAccount, claims.emailVerified == true else {
            throw Rejection(.wrongAccount, "the token is not the verified GOOGLE_PUSH_SERVICE_ACCOUNT's")
        }
        guard let expires = claims.exp, now.timeIntervalSince1970 < expires + Self.clockSkew else {
            throw Rejection(.expired, "the token has expired")
        }
        if let issued = claims.iat, issued > now.timeIntervalSince1970 + Self.clockSkew {
            throw Rejection(.expired, "the token was issued in the future")
        }
    }
}
