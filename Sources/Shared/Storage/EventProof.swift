// SPDX-License-Identifier: Apache-2.0
import Crypto
public import Foundation
public import NIOCore

/// Proof that a queue row was stored by Sluice (`EVENT_SIGNING_KEY`): an HMAC-SHA256, under a key
/// only ingest and the worker hold, of what the worker acts on — the row's source, external id,
/// type, origin and payload. The database never holds the key, so its credentials alone (ingest's
/// leaked, say) cannot make a row the worker applies: a row without a valid proof is refused.
///
/// Rows stored before the worker first ran with the key are given one by the worker, once, at
/// that start (the worker's `ProofBackfill`); from then on a row without a valid proof is never applied,
/// whatever its id. The same key proves `app_account_tokens` rows (``proof(ofToken:userID:)``).
///
/// During a rotation the variable holds `new,old`: rows are proven with the first key and
/// accepted with any.
public struct EventProof: Sendable {
    private let keys: [SymmetricKey]

    /// The shortest key accepted, in characters (`openssl rand -hex 32` gives 64).
    public static let minimumLength = 32

    /// - Parameter secret: one key, or several comma-separated (the first proves).
    /// - Throws: ``ConfigurationError`` for a key shorter than ``minimumLength``.
    public init(secret: String) throws(ConfigurationError) {
        let secrets = secret.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !secrets.isEmpty, secrets.allSatisfy({ $0.count >= Self.minimumLength }) else {
            throw ConfigurationError(variable: "EVENT_SIGNING_KEY", reason: "must be at least \(Self.minimumLength) characters (openssl rand -hex 32)")
        }
        keys = secrets.map { SymmetricKey(data: Data($0.utf8)) }
    }

    /// `EVENT_SIGNING_KEY` (or `_FILE`), or `nil` when it is not set.
    public static func configured(by environment: EnvironmentValues) throws(ConfigurationError) -> EventProof? {
        guard let secret = environment.string("EVENT_SIGNING_KEY") else { return nil }
        return try EventProof(secret: secret)
    }

    /// The proof of a row, over each field length-prefixed, so no two rows share an input.
    public func proof(source: String, externalID: String, type: String, origin: String, payload: ByteBuffer) -> [UInt8] {
        Self.mac(Self.rowFields(source: source, externalID: externalID, type: type, origin: origin, payload: payload), key: keys[0])
    }

    public func proof(of record: EventRecord) -> [UInt8] {
        proof(source: record.source.rawValue, externalID: record.externalID, type: record.type, origin: record.origin.rawValue, payload: record.payload)
    }

    /// Whether `presented` is the row's proof under any of the keys, compared in constant time.
    public func verifies(
        _ presented: [UInt8], source: String, externalID: String, type: String, origin: String, payload: ByteBuffer
    ) -> Bool {
        verifies(presented, fields: Self.rowFields(source: source, externalID: externalID, type: type, origin: origin, payload: payload))
    }

    /// The proof of an `app_account_tokens` row: that Sluice registered `token` as `userID`'s.
    ///
    /// Its first field names what is proven, a value no queue row's `source` takes, so a token's
    /// proof is never a row's.
    public func proof(ofToken token: UUID, userID: String) -> [UInt8] {
        Self.mac(Self.tokenFields(token: token, userID: userID), key: keys[0])
    }

    /// Whether `presented` proves that `token` is `userID`'s, under any of the keys.
    public func verifies(_ presented: [UInt8], token: UUID, userID: String) -> Bool {
        verifies(presented, fields: Self.tokenFields(token: token, userID: userID))
    }

    private static func rowFields(source: String, externalID: String, type: String, origin: String, payload: ByteBuffer) -> [[UInt8]] {
        [Array(source.utf8), Array(externalID.utf8), Array(type.utf8), Array(origin.utf8), Array(payload.readableBytesView)]
    }

    private static func tokenFields(token: UUID, userID: String) -> [[UInt8]] {
        [Array("app_account_token".utf8), Array(token.uuidString.lowercased().utf8), Array(userID.utf8)]
    }

    private func verifies(_ presented: [UInt8], fields: [[UInt8]]) -> Bool {
        var matched = false
        for key in keys {
            let expected = Self.mac(fields, key: key)
            guard presented.count == expected.count else { continue }
            var difference: UInt8 = 0
            for (a, b) in zip(presented, expected) { difference |= a ^ b }
            matched = matched || difference == 0
        }
        return matched
    }

    private static func mac(_ fields: [[UInt8]], key: SymmetricKey) -> [UInt8] {
        var mac = HMAC<SHA256>(key: key)
        for field in fields { update(&mac, field) }
        return Array(mac.finalize())
    }

    private static func update(_ mac: inout HMAC<SHA256>, _ bytes: some Collection<UInt8>) {
        var length = UInt32(bytes.count).bigEndian
        withUnsafeBytes(of: &length) { mac.update(data: Array($0)) }
        mac.update(data: Array(bytes))
    }
}
