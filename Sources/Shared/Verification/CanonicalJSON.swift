// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import NIOFoundationCompat

/// The stored form of a verified body whose request may have carried more than was verified (an
/// Apple notification, a StoreKit sync, a Pub/Sub push): its members in one order, no padding, no
/// other keys.
enum CanonicalJSON {
    static func encode(_ body: some Encodable) -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings only: encoding cannot fail.
        return ByteBuffer(data: (try? encoder.encode(body)) ?? Data())
    }
}
