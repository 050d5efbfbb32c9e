// SPDX-License-Identifier: Apache-2.0
import Shared

/// Which environment's state the read API answers with: its `environment` parameter, whose default
/// is `READ_API_ENVIRONMENT` (`all`, so App Review's Sandbox purchases work with the production build).
enum EnvironmentFilter: String, Sendable, CaseIterable {
    case production, sandbox, all

    /// The one environment to keep, or `nil` for both.
    var only: PurchaseEnvironment? { PurchaseEnvironment(rawValue: rawValue) }

    static let accepted = allCases.map(\.rawValue).joined(separator: ", ")
}
