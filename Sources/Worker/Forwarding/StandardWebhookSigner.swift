// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Shared

/// Signs forwarded notifications the Standard Webhooks way: `webhook-signature: v1,<base64>` where
/// the base64 is HMAC-SHA256, keyed by the secret's bytes, of `"{webhook-id}.{webhook-timestamp}.{body}"`.
///
/// Each secret is `whsec_` followed by the key in standard base64 (`FORWARD_SECRET`, comma- or
/// space-separated during a rotation): one `v1,` signature per key, space-separated, as the
/// specification sends them, so receivers holding either key verify.
struct StandardWebhookSigner: Sendable {
    /// The specification's keys are 24 to 64 random bytes.
    static let minimumKeyBytes = 24

    private let keys: [SymmetricKey]

    /// - Throws: ``ConfigurationError`` naming `FORWARD_SECRET`, never its value.
    init(secret: String) throws {
        let prefix = "whsec_"
        let entries = secret.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
        guard !entries.isEmpty else {
            throw ConfigurationError(variable: "FORWARD_SECRET", reason: "must be whsec_ followed by a base64 key")
        }
        keys = try entries.map { entry in
            guard entry.hasPrefix(prefix), let bytes = Data(base64Encoded: String(entry.dropFirst(prefix.count))), !bytes.isEmpty else {
                throw ConfigurationError(variable: "FORWARD_SECRET", reason: "must be whsec_ followed by a base64 key")
            }
            guard bytes.count >= Self.minimumKeyBytes else {
                throw ConfigurationError(
                    variable: "FORWARD_SECRET", reason: "a key shorter than \(Self.minimumKeyBytes) bytes is too weak (use 32 random bytes)")
            }
            return SymmetricKey(data: bytes)
        }
    }

    /// The `webhook-signature` header value.
    func signature(id: String, timestamp: Int64, body: some DataProtocol) -> String {
        keys.map { key in
            var mac = HMAC<SHA256>(key: key)
            mac.update(data: Data("\(id).\(timestamp).".utf8))
            mac.update(data: body)
            return "v1," + Data(mac.finalize()).base64EncodedString()
        }.joined(separator: " ")
    }
}
