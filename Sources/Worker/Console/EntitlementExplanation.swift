// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// Why an entitlement reads `is_active` true or false, in a sentence for an operator.
enum EntitlementExplanation {
    static func why(_ body: EntitlementBody, now: Date) -> String {
        let state = body.entitlement.state
        let ending = state.status == .gracePeriod ? (state.gracePeriodExpiresAt ?? state.expiresAt) : state.expiresAt
        if body.isActive {
            switch state.status {
            case .gracePeriod: return "in the billing grace period until \(ConsoleFormat.time(ending))"
            case .cancelled: return "cancelled, but paid until \(ConsoleFormat.time(ending))"
            case .trialing: return "in a free trial until \(ConsoleFormat.time(state.trialEndsAt ?? ending))"
            default:
                if let ending, ending < now { return "its period ended \(ConsoleFormat.time(ending)); within the leeway" }
                return ending.map { "paid until \(ConsoleFormat.time($0))" } ?? "bought for good"
            }
        }
        switch state.status {
        case .refunded: return "refunded"
        case .revoked: return "revoked (refunded, or Family Sharing ended)"
        case .expired: return "expired" + (state.expirationReason.map { ": \($0.rawValue)" } ?? "")
        case .pastDue: return "payment failed and no grace period runs"
        case .paused: return "paused"
        default: break
        }
        if let ending, ending < now { return "its period ended \(ConsoleFormat.time(ending)) with no renewal" }
        if state.environment == .sandbox { return "a sandbox purchase SANDBOX_ACCESS does not grant to this user" }
        return state.status.rawValue
    }
}
