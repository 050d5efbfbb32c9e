// SPDX-License-Identifier: Apache-2.0

/// What Sluice accepts as an app's user id, wherever one comes in — a StoreKit sync, a token
/// registration (its path segment percent-decoded first), the read API, a Stripe object's
/// metadata: 1 to 255 bytes of UTF-8 without control characters. A NUL cannot be stored in
/// PostgreSQL text, and an ESC or OSC sequence would reach the operator's terminal.
public enum UserIDRule {
    public static let maximumBytes = 255

    /// Why `id` is not a user id Sluice accepts, or `nil` when it is one.
    public static func problem(with id: String) -> String? {
        guard !id.isEmpty, id.utf8.count <= maximumBytes else { return "user_id must be 1 to \(maximumBytes) bytes" }
        guard !id.unicodeScalars.contains(where: isControl) else { return "user_id must not contain control characters" }
        return nil
    }

    /// Whether `text` holds a control character (`email` of the read API is held to the same).
    public static func containsControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains(where: isControl)
    }

    /// A control character: C0 (U+0000–U+001F), DEL (U+007F) or C1 (U+0080–U+009F).
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
