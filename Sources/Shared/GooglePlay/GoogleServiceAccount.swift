// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Crypto
import CryptoExtras
public import Foundation
public import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Synchronization

/// A Google service account's JSON key file and the OAuth 2.0 access tokens it obtains (the
/// JWT-bearer grant, RFC 7523): an RS256 assertion `{iss: client_email, scope, aud: token_uri, iat,
/// exp}` posted to the file's `token_uri`, the `access_token` answered kept until a few minutes
/// before its `expires_in` ends.
///
/// The private key is held here only; it is never logged, and the file's content never reaches an
/// error message.
public final class GoogleServiceAccount: Sendable {
    /// The key file's fields Sluice reads.
    struct KeyFile: Decodable {
        var type: String?
        var client_email: String
        var private_key: String
        var private_key_id: String?
        var token_uri: String?
    }

    /// The token endpoint's answer.
    struct TokenAnswer: Decodable {
        var access_token: String
        var expires_in: Double?
    }

    public static let androidPublisherScope = "https://www.googleapis.com/auth/androidpublisher"
    /// How long before its end a token is replaced.
    static let renewBefore: TimeInterval = 5 * 60
    /// The assertion's lifetime; Google accepts at most an hour.
    static let assertionLifetime: TimeInterval = 60 * 60

    public let email: String
    let keyID: String?
    let key: _RSA.Signing.PrivateKey
    public let tokenURL: String
    let scope: String
    private let cached = Mutex<(token: String, expires: Date)?>(nil)

    /// Reads a key file's JSON.
    ///
    /// - Throws: ``ConfigurationError`` naming `variable`, never quoting the file.
    public init(keyFile data: Data, variable: String, scope: String = androidPublisherScope) throws {
        guard let file = try? JSONDecoder().decode(KeyFile.self, from: data), file.type == nil || file.type == "service_account" else {
            throw ConfigurationError(variable: variable, reason: "is not a service account JSON key file (client_email, private_key)")
        }
        guard let key = try? _RSA.Signing.PrivateKey(pemRepresentation: file.private_key) else {
            throw ConfigurationError(variable: variable, reason: "holds a private_key that is not an RSA PEM key")
        }
        let tokenURL = file.token_uri ?? "https://oauth2.googleapis.com/token"
        guard let url = URL(string: tokenURL), url.scheme == "https" || LoopbackHost.contains(url.host ?? "") else {
            throw ConfigurationError(variable: variable, reason: "holds a token_uri that is not https://")
        }
        self.email = file.client_email
        self.keyID = file.private_key_id
        self.key = key
        self.tokenURL = tokenURL
        self.scope = scope
    }

    /// A bearer token for the Play Developer API, cached or new.
    ///
    /// - Throws: ``ProviderAPIError`` when the token endpoint refuses (a deleted key, a clock far off).
    public func accessToken(call: ProviderCall, now: Date = Date(), logger: Logger) async throws -> String {
        if let cached = cached.withLock({ $0 }), cached.expires.timeIntervalSince(now) > Self.renewBefore {
            return cached.token
        }
        var request = HTTPClientRequest(url: tokenURL)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let form = "grant_type=" + Self.formEncoded("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion=" + (try assertion(now: now))
        request.body = .bytes(ByteBuffer(string: form))
        let (status, body) = try await call.send(request, logger: logger)
        guard (200..<300).contains(status), let answer = try? JSONDecoder().decode(TokenAnswer.self, from: body) else {
            throw ProviderAPIError(provider: "Google OAuth", status: status, message: Self.errorCode(body))
        }
        let expires = now.addingTimeInterval(answer.expires_in ?? 3_600)
        cached.withLock { $0 = (answer.access_token, expires) }
        return answer.access_token
    }

    /// Forgets the cached token, which Google refused (revoked before its end): the next call gets a new one.
    public func forgetToken() {
        cached.withLock { $0 = nil }
    }

    /// The signed JWT-bearer assertion.
    func assertion(now: Date) throws -> String {
        var header: [String: String] = ["alg": "RS256", "typ": "JWT"]
        header["kid"] = keyID
        let issued = Int64(now.timeIntervalSince1970)
        let claims: [String: any Sendable] = [
            "iss": email, "scope": scope, "aud": tokenURL, "iat": issued, "exp": issued + Int64(Self.assertionLifetime),
        ]
        let input = Base64URL.encode(try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])) + "."
            + Base64URL.encode(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
        let signature = try key.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// `application/x-www-form-urlencoded` of a value: everything but unreserved characters escaped.
    static func formEncoded(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    /// The OAuth error code of an answer (`invalid_grant`), never its description, which may quote the request.
    private static func errorCode(_ body: ByteBuffer) -> String {
        struct OAuthError: Decodable { var error: String? }
        return (try? JSONDecoder().decode(OAuthError.self, from: body))?.error.map { String($0.prefix(64)) } ?? "no token"
    }
}
