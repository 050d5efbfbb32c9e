// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import HTTPTypes
import Shared

/// The `Idempotency-Key` request header, in the shape Stripe takes it: 1 to 255 characters, none of
/// them control characters. Balance transactions require one; an app's checkout request may send one.
enum IdempotencyKeyHeader {
    static let name = HTTPField.Name("Idempotency-Key")!

    /// What `request` sends under the header.
    enum Sent: Equatable {
        case none
        case key(String)
        /// Empty, longer than 255 characters, or with a control character.
        case malformed
    }

    static func sent(in request: Request) -> Sent {
        guard let key = request.headers[name] else { return .none }
        return (1...255).contains(key.count) && !UserIDRule.containsControlCharacters(key) ? .key(key) : .malformed
    }
}
