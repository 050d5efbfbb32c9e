// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
public import Logging

/// Whether Sandbox and Stripe test-mode entitlements give access (`SANDBOX_ACCESS`,
/// `SANDBOX_USERS`), as RevenueCat's "Sandbox Testing Access" setting does.
///
/// The data is kept either way: a sandbox entitlement a rule does not grant reads
/// `is_active: false`, and the read API leaves it out of an answer that names no `environment`.
/// Production entitlements are never affected.
public struct SandboxAccess: Sendable, Equatable {
    public enum Rule: String, Sendable, CaseIterable {
        /// Every user's sandbox purchases count: App Review's, testers', anyone's with a client key.
        case anybody
        /// Only the users in `SANDBOX_USERS`.
        case listed
        /// No sandbox purchase counts (App Review's neither).
        case nobody
    }

    public var rule: Rule
    /// User ids listed in the clear.
    private var userIDs: Set<String>
    /// SHA-256 digests of user ids listed as `sha256:<hex>`, so the list need not name anyone.
    private var userDigests: Set<[UInt8]>

    public static let anybody = SandboxAccess(rule: .anybody, userIDs: [], userDigests: [])

    /// - Parameters:
    ///   - rule: `SANDBOX_ACCESS`.
    ///   - users: `SANDBOX_USERS`: user ids or `sha256:<64 hex digits>` of user ids.
    /// - Throws: ``ConfigurationError`` for a malformed digest, or a list without `listed` (or
    ///   `listed` without a list), which would not do what its writer meant.
    public init(rule: Rule, users: [String]) throws(ConfigurationError) {
        var ids: Set<String> = []
        var digests: Set<[UInt8]> = []
        for user in users {
            guard user.lowercased().hasPrefix("sha256:") else {
                ids.insert(user)
                continue
            }
            guard let digest = SHA256Hex.bytes(user.dropFirst("sha256:".count)) else {
                throw ConfigurationError(variable: "SANDBOX_USERS", reason: "has a sha256: entry that is not 64 hex digits")
            }
            digests.insert(digest)
        }
        if rule == .listed, users.isEmpty {
            throw ConfigurationError(variable: "SANDBOX_USERS", reason: "must name at least one user when SANDBOX_ACCESS=listed")
        }
        if rule != .listed, !users.isEmpty {
            throw ConfigurationError(variable: "SANDBOX_USERS", reason: "is used only with SANDBOX_ACCESS=listed")
        }
        self.init(rule: rule, userIDs: ids, userDigests: digests)
    }

    private init(rule: Rule, userIDs: Set<String>, userDigests: Set<[UInt8]>) {
        self.rule = rule
        self.userIDs = userIDs
        self.userDigests = userDigests
    }

    /// Reads `SANDBOX_ACCESS` (default `anybody`) and `SANDBOX_USERS`.
    public init(environment: EnvironmentValues) throws(ConfigurationError) {
        let text = environment.string("SANDBOX_ACCESS")?.lowercased() ?? Rule.anybody.rawValue
        guard let rule = Rule(rawValue: text) else {
            throw ConfigurationError(
                variable: "SANDBOX_ACCESS", reason: "must be one of \(Rule.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        try self.init(rule: rule, users: environment.list("SANDBOX_USERS"))
    }

    /// Whether an entitlement of `environment` held by `userID` may give access.
    public func grants(_ environment: PurchaseEnvironment, to userID: String?) -> Bool {
        guard environment == .sandbox else { return true }
        switch rule {
        case .anybody: return true
        case .nobody: return false
        case .listed:
            guard let userID else { return false }
            return userIDs.contains(userID) || userDigests.contains(Array(SHA256.hash(data: Data(userID.utf8))))
        }
    }

    /// How loudly to say ``startWarning`` at start: `nobody` locks App Review out (a warning);
    /// `anybody` is the documented default's trade-off (a notice, so a dev stack starts quietly).
    public var startLogLevel: Logger.Level {
        rule == .nobody ? .warning : .notice
    }

    /// What to say at start about the setting's risk, or `nil` for a setting without surprises.
    public var startWarning: String? {
        switch rule {
        case .anybody:
            "SANDBOX_ACCESS=anybody: Sandbox and Stripe test-mode purchases give access to any user (free for TestFlight testers); once the app is approved, consider SANDBOX_ACCESS=listed"
        case .nobody:
            "SANDBOX_ACCESS=nobody: App Review buys in Sandbox with the production build, and its purchases will not unlock anything"
        case .listed: nil
        }
    }
}
