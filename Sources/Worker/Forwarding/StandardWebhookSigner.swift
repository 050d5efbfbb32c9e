// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Shared

/// Signs forwarded notifications the Standard Webhooks way: `webhook-signature: v1,<base64>` where
/// the base64 is HMAC-SHA256, keyed by the secret's bytes, of `"{webhook-id}.{webhook-timestamp}.{body}"`.
///
/// The secret is `whsec_` followed by the key in standard base64 (`FORWARD_SECRET`).
struct StandardWebhookSigner: Sendable {
    private let key: SymmetricKey

    /// - Throws: ``ConfigurationError`` naming `FORWARD_SECRET`, never its value.
    init(secret: String) throws {
        let prefix = "whsec_"
        guard secret.hasPrefix(prefix), let bytes = Data(base64Encoded: String(secret.dropFirst(prefix.count))), !bytes.isEmpty else {
            throw ConfigurationError(variable: "FORWARD_SECRET", reason: "must be whsec_ followed by a base64 key")
        }
        key = SymmetricKey(data: bytes)
    }

    /// The `webhook-signature` header value.
    func signature(id: String, timestamp: Int64, body: some DataProtocol) -> String {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Data("\(id).\(timestamp).".utf8))
        mac.update(data: body)
        return "v1," + Data(mac.finalize()).base64EncodedString()
    }
}
