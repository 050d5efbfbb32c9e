// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import HTTPTypes
import Shared

/// The `Idempotency-Key` request header, in the shape Stripe takes it: 1 to 255 characters, none of
/// them control characters. Balance transactions require one; an app's checkout request may send one.
enum IdempotencyKeyHeader {
    static let name = HTTPField.Name("Idempotency-Key")!

    /// The key `request` sends in that shape; `nil` when it sends none, or one out of shape.
    static func key(of request: Request) -> String? {
        guard let key = request.headers[name], isWellFormed(key) else { return nil }
        return key
    }

    /// Whether the request sends the header at all (a malformed one is refused, not ignored).
    static func isSent(in request: Request) -> Bool { request.headers[name] != nil }

    static func isWellFormed(_ key: String) -> Bool {
        (1...255).contains(key.count) && !UserIDRule.containsControlCharacters(key)
    }
}
