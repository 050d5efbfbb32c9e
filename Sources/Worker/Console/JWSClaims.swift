// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// Apple's payloads hold JWS inside JWS (`signedPayload` → `data.signedTransactionInfo`,
/// `signedRenewalInfo`; a sync's `signedTransaction`). For an operator reading a stored event, this
/// decodes every compact JWS found in a JSON document into its claims, recursively — decoding
/// only: the signatures were verified when the event was received.
enum JWSClaims {
    /// The document with each JWS string replaced by its decoded claims, pretty-printed; `nil`
    /// when the document is not JSON or holds no JWS.
    static func decoded(_ json: String) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed]) else { return nil }
        var found = false
        let expanded = expand(object, found: &found, depth: 0)
        guard found,
            let data = try? JSONSerialization.data(withJSONObject: expanded, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    private static func expand(_ value: Any, found: inout Bool, depth: Int) -> Any {
        guard depth < 8 else { return value }
        switch value {
        case let dictionary as [String: Any]:
            return dictionary.mapValues { expand($0, found: &found, depth: depth + 1) }
        case let array as [Any]:
            return array.map { expand($0, found: &found, depth: depth + 1) }
        case let text as String:
            guard let claims = claims(ofCompactJWS: text) else { return text }
            found = true
            return expand(claims, found: &found, depth: depth + 1)
        default:
            return value
        }
    }

    /// The payload of `header.payload.signature` when the header is a JSON object with an `alg`.
    static func claims(ofCompactJWS text: String) -> Any? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count < 20_000,
            let header = Base64URL.decode(parts[0]),
            let headerObject = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any], headerObject["alg"] != nil,
            let payload = Base64URL.decode(parts[1]),
            let claims = try? JSONSerialization.jsonObject(with: Data(payload))
        else { return nil }
        return claims
    }
}
