// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Hummingbird
import HTTPTypes
import NIOCore
import Shared

/// Checks the API key of the StoreKit sync and read API (`X-Sluice-Key: KEY` or `Authorization: Bearer KEY`).
///
/// Server keys (`API_KEYS`) may read and sync; client keys (`CLIENT_API_KEYS`), the ones shipped in
/// apps, may only sync: a read with one is `403`. Keys are held and compared as SHA-256 digests,
/// looking at every byte of every configured key, so neither the position of a mismatch nor which
/// key matched shows in the timing.
struct APIKeyCheck: Sendable {
    /// What a presented key may do.
    enum Role: Sendable { case server, client }

    private let server: [[UInt8]]
    private let client: [[UInt8]]
    /// The rate limits an accepted key's requests count against; `nil` for none.
    private let limits: RequestLimits?

    /// - Parameters:
    ///   - server: the SHA-256 digests of the server keys (``APIKeyDigests/parse(_:variable:)``).
    ///   - client: the client keys' digests.
    ///   - limits: the rate limits, or `nil` for none.
    init(server: [[UInt8]], client: [[UInt8]] = [], limits: RequestLimits? = nil) {
        self.server = server
        self.client = client
        self.limits = limits
    }

    /// Plain keys, for tests and tools.
    init(keys: [String]) {
        self.init(server: keys.map(APIKeyDigests.digest))
    }

    /// The read API and token registration: a server key, within the rate limits.
    ///
    /// - Parameter remoteAddress: the connection's peer, for the client address's limit.
    /// - Throws: ``APIError`` `401` when the key is missing or unknown, `403` for a client key,
    ///   `429` over a rate limit.
    func requireServer(_ request: Request, from remoteAddress: SocketAddress? = nil) throws {
        if try role(request, from: remoteAddress) != .server {
            throw APIError(.forbidden, code: "forbidden", message: "a client key may only sync StoreKit transactions; the read API takes a server key")
        }
    }

    /// The StoreKit sync: a server or a client key, within the rate limits.
    ///
    /// - Returns: which kind of key it was.
    @discardableResult
    func requireAny(_ request: Request, from remoteAddress: SocketAddress? = nil) throws -> Role {
        try role(request, from: remoteAddress)
    }

    private func role(_ request: Request, from remoteAddress: SocketAddress?) throws -> Role {
        guard let presented = Self.presentedKey(request.headers) else {
            throw APIError(.unauthorized, code: "unauthorized", message: "an API key is required (X-Sluice-Key or Authorization: Bearer)")
        }
        let digest = APIKeyDigests.digest(presented)
        guard let role = role(ofDigest: digest) else {
            throw APIError(.unauthorized, code: "unauthorized", message: "the API key is not accepted")
        }
        try limits?.admit(keyDigest: digest, role: role, request: request, remoteAddress: remoteAddress)
        return role
    }

    func role(of key: String) -> Role? {
        role(ofDigest: APIKeyDigests.digest(key))
    }

    private func role(ofDigest presented: [UInt8]) -> Role? {
        let isServer = Self.matches(presented, server)
        let isClient = Self.matches(presented, client)
        return isServer ? .server : isClient ? .client : nil
    }

    /// Whether `digest` is one of `digests`, in time that depends only on how many there are.
    private static func matches(_ digest: [UInt8], _ digests: [[UInt8]]) -> Bool {
        var matched: UInt8 = 0
        for candidate in digests {
            var difference: UInt8 = 0
            for (a, b) in zip(candidate, digest) { difference |= a ^ b }
            matched |= difference == 0 ? 1 : 0
        }
        return matched == 1
    }

    static func presentedKey(_ headers: HTTPFields) -> String? {
        if let key = headers[.sluiceKey], !key.isEmpty { return key }
        if let authorization = headers[.authorization], authorization.lowercased().hasPrefix("bearer ") {
            let key = authorization.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
            return key.isEmpty ? nil : key
        }
        return nil
    }
}

/// Reads `API_KEYS` and `CLIENT_API_KEYS`: each entry a key of at least 32 characters, or
/// `sha256:<64 hex digits>` (the key's SHA-256, so the environment need not hold it in clear).
enum APIKeyDigests {
    static let minimumLength = 32

    /// Values shown in the examples (`deploy/env.example`, the Kubernetes secret example, scripts):
    /// a deployment that kept one would be open to anyone who read them.
    static let placeholders: Set<String> = [
        "replace-with-a-long-random-key", "replace-with-a-long-random-client-key", "dev_api_key", "change-me", "changeme",
    ]

    static func digest(_ key: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(key.utf8)))
    }

    static func parse(_ entries: [String], variable: String) throws -> [[UInt8]] {
        try entries.enumerated().map { index, entry in
            if entry.lowercased().hasPrefix("sha256:") {
                guard let bytes = SHA256Hex.bytes(entry.dropFirst("sha256:".count)) else {
                    throw ConfigurationError(variable: variable, reason: "entry \(index + 1): sha256: must be followed by 64 hex digits")
                }
                return bytes
            }
            guard !placeholders.contains(entry.lowercased()), !entry.lowercased().hasPrefix("replace-with") else {
                throw ConfigurationError(variable: variable, reason: "entry \(index + 1) is the documented placeholder: set a random key")
            }
            guard entry.count >= minimumLength else {
                throw ConfigurationError(
                    variable: variable, reason: "entry \(index + 1) is shorter than \(minimumLength) characters (use e.g. openssl rand -hex 32)")
            }
            return digest(entry)
        }
    }
}
