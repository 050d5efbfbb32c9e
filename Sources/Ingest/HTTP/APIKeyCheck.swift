// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Hummingbird
import HTTPTypes

/// Checks the API key of the StoreKit sync and read API (`X-Sluice-Key: KEY` or `Authorization: Bearer KEY`).
///
/// Keys are compared as SHA-256 digests with a comparison that looks at every byte of every
/// configured key, so neither the position of a mismatch nor which key matched shows in the timing.
struct APIKeyCheck: Sendable {
    private let digests: [[UInt8]]

    init(keys: [String]) {
        digests = keys.map { Array(SHA256.hash(data: Data($0.utf8))) }
    }

    /// - Throws: ``APIError`` `401 unauthorized` when the key is missing or unknown.
    func require(_ request: Request) throws {
        guard let presented = Self.presentedKey(request.headers) else {
            throw APIError(.unauthorized, code: "unauthorized", message: "an API key is required (X-Sluice-Key or Authorization: Bearer)")
        }
        guard accepts(presented) else {
            throw APIError(.unauthorized, code: "unauthorized", message: "the API key is not accepted")
        }
    }

    func accepts(_ key: String) -> Bool {
        let presented = Array(SHA256.hash(data: Data(key.utf8)))
        var matched: UInt8 = 0
        for digest in digests {
            var difference: UInt8 = 0
            for (a, b) in zip(digest, presented) { difference |= a ^ b }
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
