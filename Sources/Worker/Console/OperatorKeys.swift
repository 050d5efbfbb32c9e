// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Shared

/// The console's keys (`OPERATOR_KEYS`): a third kind beside ingest's server and client keys,
/// for people, not programs. Comma-separated, each at least 32 characters; several during a rotation.
///
/// Held as SHA-256 digests and compared looking at every byte of every key, so the timing shows
/// neither where a wrong key differs nor which key matched.
struct OperatorKeys: Sendable {
    static let minimumLength = 32

    private let digests: [[UInt8]]
    /// Per key, the secret that signs its sessions, derived from the key (never the key itself).
    let sessionSecrets: [SymmetricKey]

    init(_ keys: [String]) throws(ConfigurationError) {
        guard !keys.isEmpty else {
            throw ConfigurationError(variable: "OPERATOR_KEYS", reason: "is required: the console's keys, comma-separated, each at least 32 characters")
        }
        if keys.contains(where: { $0.count < Self.minimumLength }) {
            throw ConfigurationError(variable: "OPERATOR_KEYS", reason: "has a key shorter than \(Self.minimumLength) characters")
        }
        digests = keys.map { Array(SHA256.hash(data: Data($0.utf8))) }
        sessionSecrets = keys.map { key in
            SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Data("sluice console session".utf8), using: SymmetricKey(data: Data(key.utf8))))
        }
    }

    init(environment: EnvironmentValues) throws(ConfigurationError) {
        try self.init(environment.list("OPERATOR_KEYS"))
    }

    /// The position of the key `presented` is, or `nil`; every key is compared in full.
    func index(of presented: String) -> Int? {
        let digest = Array(SHA256.hash(data: Data(presented.utf8)))
        var found: Int?
        for (index, candidate) in digests.enumerated() where Self.equal(candidate, digest) {
            found = found ?? index
        }
        return found
    }

    /// Compares two byte strings in time that depends only on their lengths.
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
