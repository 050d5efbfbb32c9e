// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// What decides whether an entitlement gives access now, read once from the environment by each
/// process and command that says `is_active`: the read API, the worker's announcements, the
/// console, `worker customer` and `worker rebuild`, and recovery's choice of what to check.
public struct AccessRules: Sendable {
    /// `ENTITLEMENT_LEEWAY_SECONDS` (default 3600): how long past `expires_at` an entitlement still
    /// reads active while its renewal arrives.
    public let leewaySeconds: Int
    /// `SANDBOX_ACCESS` and `SANDBOX_USERS`: whose sandbox purchases give access.
    public let sandboxAccess: SandboxAccess

    public var leeway: TimeInterval { TimeInterval(leewaySeconds) }

    public init(environment: EnvironmentValues) throws {
        leewaySeconds = try environment.int("ENTITLEMENT_LEEWAY_SECONDS", default: 3_600, range: 0...604_800)
        sandboxAccess = try SandboxAccess(environment: environment)
    }
}
