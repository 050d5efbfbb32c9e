// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import Shared

/// Recovers App Store Server Notifications from Get Notification History: each `signedPayload` is
/// stored byte for byte as its webhook body would have been, after the webhook's own verification.
struct AppleRecovery: Sendable {
    let api: AppStoreServerAPI
    let verifier: AppleNotificationVerifier
    let bundleIDs: [String]
    let store: RecoveredEventStore

    /// How far back Apple keeps notification history.
    static func retention(_ environment: PurchaseEnvironment) -> TimeInterval {
        environment == .production ? 180 * 86_400 : 30 * 86_400
    }

    /// Every page of every app's history in the window.
    func recover(
        environment: PurchaseEnvironment, from start: Date, to end: Date, onlyFailures: Bool, dryRun: Bool, logger: Logger
    ) async throws -> RecoveryReport {
        // Apple refuses a start older than its retention; an hour of margin for the clock.
        let start = max(start, end.addingTimeInterval(-Self.retention(environment) + 3_600))
        var report = RecoveryReport()
        guard start < end else { return report }
        for bundleID in bundleIDs {
            var token: String?
            repeat {
                let page = try await api.notificationHistory(
                    bundleID: bundleID, environment: environment, from: start, to: end, onlyFailures: onlyFailures,
                    paginationToken: token, logger: logger)
                var records: [EventRecord] = []
                for item in page.notificationHistory ?? [] {
                    report.found += 1
                    guard let signed = item.signedPayload else {
                        report.rejected["malformed", default: 0] += 1
                        continue
                    }
                    do {
                        var record = try await verifier.verifyNotification(body: Self.webhookBody(signed), sandbox: environment == .sandbox)
                        record.origin = .recovery
                        records.append(record)
                    } catch {
                        report.rejected[error.reason.code, default: 0] += 1
                        logger.warning("recovered notification rejected", metadata: [
                            "environment": "\(environment.rawValue)", "reason": "\(error.reason)", "detail": "\(error.message)"])
                    }
                }
                try await store.store(records, dryRun: dryRun, into: &report)
                token = page.hasMore == true ? page.paginationToken : nil
            } while token != nil
        }
        return report
    }

    /// `{"signedPayload":"…"}`, exactly as Apple posts it (a JWS needs no escaping).
    static func webhookBody(_ signedPayload: String) -> ByteBuffer {
        ByteBuffer(string: #"{"signedPayload":""# + signedPayload + #""}"#)
    }
}
