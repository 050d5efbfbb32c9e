// SPDX-License-Identifier: Apache-2.0
import Foundation
import Crypto

/// A receiver's check of a Standard Webhooks signature, written from the specification and
/// independent of Sluice's signer: the secret's base64 part (after `whsec_`) is the key, the
/// signed content is `"{id}.{timestamp}.{body}"`, and the header lists space-separated
/// `v1,<base64>` signatures, any one of which may match. Used by the tests and `sluice-dev e2e`.
public enum StandardWebhooksReceiver {
    public static func verifies(id: String, timestamp: Int64, body: [UInt8], signatureHeader: String, secret: String) -> Bool {
        guard let key = Data(base64Encoded: String(secret.split(separator: "_", maxSplits: 1).last ?? "")) else { return false }
        let content = Array("\(id).\(timestamp).".utf8) + body
        let expected = Data(HMAC<SHA256>.authenticationCode(for: content, using: SymmetricKey(data: key)))
        return signatureHeader.split(separator: " ").contains { candidate in
            let parts = candidate.split(separator: ",", maxSplits: 1)
            guard parts.count == 2, parts[0] == "v1", let given = Data(base64Encoded: String(parts[1])) else { return false }
            return given.count == expected.count && zip(given, expected).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }
}
