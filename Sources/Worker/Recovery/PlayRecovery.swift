// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Shared

/// Finds the Google Play purchases voided (refunded, charged back) whose push never arrived:
/// `purchases.voidedpurchases.list` of each app, subscriptions included, stored as the push's
/// voided rows are (the same key, so a void pushed and listed is one row).
struct PlayRecovery: Sendable {
    /// Google lists voids of the last 30 days only.
    static let listableAge: TimeInterval = 30 * 86_400 - 3_600

    let api: PlayDeveloperAPI
    let packageNames: [String]
    let store: RecoveredEventStore

    /// The most pages one listing reads: 1,000 voids each.
    static let maximumPages = 50

    func recover(from: Date, to: Date, dryRun: Bool, logger: Logger) async throws -> RecoveryReport {
        var report = RecoveryReport()
        let start = max(from, to.addingTimeInterval(-Self.listableAge))
        for packageName in packageNames {
            var pageToken: String?
            var seenTokens: Set<String> = []
            for _ in 0..<Self.maximumPages {
                let page = try await api.voidedPurchases(packageName: packageName, from: start, pageToken: pageToken)
                let records = (page.voidedPurchases ?? []).compactMap { listed -> EventRecord? in
                    guard let token = listed.purchaseToken else { return nil }
                    let voided = PlayPurchaseRecord.Voided(
                        orderId: listed.orderId, voidedTimeMillis: listed.voidedTimeMillis, partial: listed.voidedQuantity != nil ? true : nil)
                    // The listing does not say whether it was a subscription; a void is applied alike.
                    var record = PlayPurchaseRecord(
                        cause: PlayNotificationType.voidedPurchase.rawValue, fetchedAt: Date(), kind: .subscription, packageName: packageName,
                        productID: nil, purchaseToken: token, voided: voided, purchase: nil
                    ).record(externalID: PlayPurchaseRecord.voidedExternalID(voided, token: token))
                    record.origin = .recovery
                    return record
                }
                report.found += records.count
                try await store.store(records, dryRun: dryRun, into: &report)
                // The next page, unless there is none or Google repeats one.
                guard let next = page.tokenPagination?.nextPageToken, !next.isEmpty, seenTokens.insert(next).inserted else { break }
                pageToken = next
            }
        }
        return report
    }
}
