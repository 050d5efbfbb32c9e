// SPDX-License-Identifier: Apache-2.0
public import Foundation
import Crypto

/// RFC 9562 name-based UUIDs, version 5 (SHA-1): the same namespace and name always give the
/// same UUID. docs/getting-started.md shows the app's server deriving an `appAccountToken` from
/// its account id this way; `sluice-dev send apple` does the same for the sample's user.
public enum NameBasedUUID {
    /// The namespace the development samples derive tokens in. A real app uses its own, kept secret.
    public static let developmentNamespace = UUID(uuidString: "9f3a6c52-1e0b-4d7f-8a2e-5b6c7d8e9f01")!

    /// UUIDv5 of `name` (its UTF-8 bytes) in `namespace`.
    public static func version5(namespace: UUID, name: String) -> UUID {
        var input = withUnsafeBytes(of: namespace.uuid) { Array($0) }
        input.append(contentsOf: Array(name.utf8))
        var bytes = Array(Insecure.SHA1.hash(data: input).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50  // version 5
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 9562 variant
        return UUID(uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
