// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// What a StoreKit sync does with a purchase already linked to another user (`TRANSFER_BEHAVIOR`),
/// as RevenueCat's "Restore Behavior". It applies only to transactions without an
/// `appAccountToken`: a signed token (or the user it is registered to) always decides.
enum TransferBehavior: String, Sendable, CaseIterable {
    /// The purchase moves to the user who synced it: a restore on a new account takes the access
    /// with it (the default, as RevenueCat's).
    case transfer
    /// It moves only when it gives its current user no access any more.
    case transferIfInactive = "transfer_if_inactive"
    /// It stays with the user it was first linked to; a restore elsewhere changes nothing.
    case keep

    /// `TRANSFER_BEHAVIOR` (default `transfer`).
    init(environment: EnvironmentValues) throws(ConfigurationError) {
        let text = environment.string("TRANSFER_BEHAVIOR")?.lowercased() ?? Self.transfer.rawValue
        guard let behavior = Self(rawValue: text) else {
            throw ConfigurationError(
                variable: "TRANSFER_BEHAVIOR", reason: "must be one of \(Self.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self = behavior
    }

    enum Verdict: Sendable, Equatable {
        /// The purchase moves to the syncing user.
        case move
        /// It stays with its user, for this reason.
        case keep(String)
    }

    /// Whether a sync signed at `signedAt` moves a purchase from the user it is linked to.
    ///
    /// - Parameters:
    ///   - holderIsActive: whether the purchase gives its current user access now.
    ///   - newestEvent: the `signedDate` of the newest event applied to it: a sync signed before
    ///     that (an old copy of the signed transaction) never moves it, whatever the behavior.
    func verdict(signedAt: Date, newestEvent: Date?, holderIsActive: Bool) -> Verdict {
        if let newestEvent, signedAt.millisecondsSince1970 < newestEvent.millisecondsSince1970 {
            return .keep("the synced transaction was signed before the purchase's newest event; an old copy moves nothing")
        }
        switch self {
        case .transfer: return .move
        case .transferIfInactive: return holderIsActive ? .keep("it still gives its user access (TRANSFER_BEHAVIOR=transfer_if_inactive)") : .move
        case .keep: return .keep("TRANSFER_BEHAVIOR=keep")
        }
    }
}

/// One purchase moved from a user to another, as `entitlement_transfers` keeps it for operators.
struct EntitlementTransfer: Sendable, Equatable {
    var entityKey: String
    var fromUser: String
    var toUser: String
    /// What moved it: `sync` (with ``transactionID``) or `registration` (an `appAccountToken`).
    var cause: String
    var transactionID: String?
}
