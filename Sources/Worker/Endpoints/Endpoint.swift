// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Shared

/// A receiver of outgoing events (or of raw Apple notifications), as stored in `endpoints`.
struct Endpoint: Sendable, Equatable {
    var id: Int64
    var url: String
    var description: String?
    /// `whsec_<base64>`; `nil` only for a `FORWARD_TARGETS` endpoint without `FORWARD_SECRET`.
    var secret: String?
    /// The secret before the last rotation, which keeps signing until ``previousSecretExpiresAt``.
    var previousSecret: String?
    var previousSecretExpiresAt: Date?
    /// Type patterns (`entitlement.*`, `transaction.refunded`); empty takes every type.
    var eventTypes: [String]
    /// `stripe`, `apple`; empty takes both.
    var sources: [String]
    var environment: EnvironmentScope
    /// Receives Apple's notifications as Apple sent them, instead of outgoing events.
    var rawApple: Bool
    /// Added with `--allow-private`: may reach loopback, private and link-local addresses
    /// (``PrivateAddress``), which other endpoints are refused on every connection.
    var allowPrivate: Bool
    var maxPerSecond: Int?
    /// `operator`, or `environment` for the endpoints `FORWARD_TARGETS` makes.
    var managedBy: String
    var disabledAt: Date?
    var disabledReason: String?
    var failingSince: Date?
    var createdAt: Date

    /// Which environment's events an endpoint takes.
    enum EnvironmentScope: String, Sendable, CaseIterable {
        case production, sandbox, all
    }

    /// ``managedBy`` of the endpoints `FORWARD_TARGETS` makes: configuration, which reaches any address.
    static let managedByEnvironment = "environment"

    /// How operators, logs and metrics name it: `ep_<id>`, never its URL (which may hold a token).
    var name: String { Self.name(id) }

    static func name(_ id: Int64) -> String { "ep_\(id)" }

    /// The id in `ep_12` or `12`.
    static func id(named text: String) -> Int64? {
        Int64(text.hasPrefix("ep_") ? String(text.dropFirst(3)) : text).flatMap { $0 > 0 ? $0 : nil }
    }

    /// The keys that sign a delivery now: the secret, and the previous one during its grace.
    func signingSecrets(at now: Date) -> [String] {
        var secrets = secret.map { [$0] } ?? []
        if let previousSecret, let until = previousSecretExpiresAt, until > now { secrets.append(previousSecret) }
        return secrets
    }

    /// A new Standard Webhooks secret: `whsec_` and 32 random bytes in base64.
    static func newSecret() -> String {
        "whsec_" + SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
    }

    /// Whether `text` is an absolute `http` or `https` URL with a host (as ``ForwardTarget`` requires).
    static func validURL(_ text: String) -> Bool {
        (try? ForwardTarget(text)) != nil
    }
}
