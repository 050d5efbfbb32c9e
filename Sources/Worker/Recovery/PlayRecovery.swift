// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Shared

/// Finds the Google Play purchases voided (refunded, charged back) whose push never arrived:
/// `purchases.voidedpurchases.list` of each app, subscriptions included, stored as the push's
/// voided rows are (the same key, so a void pushed and listed is one row). A partial refund of a
/// one-time purchase is followed by its purchase's state, as a pushed one is (``PlayPartialRefunds``).
struct PlayRecovery: Sendable {
    /// Google lists voids of the last 30 days only.
    static let listableAge: TimeInterval = 30 * 86_400 - 3_600

    let api: PlayDeveloperAPI
    let packageNames: [String]
    let store: RecoveredEventStore

    private var partialRefunds: PlayPartialRefunds {
        PlayPartialRefunds(api: api, client: store.client, logger: store.logger)
    }

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
                var records: [EventRecord] = []
                var partial: [(PlayPurchaseRecord.Voided, token: String)] = []
                for listed in page.voidedPurchases ?? [] {
                    guard let token = listed.purchaseToken else { continue }
                    let voided = PlayPurchaseRecord.Voided(
                        orderId: listed.orderId, voidedTimeMillis: listed.voidedTimeMillis, partial: listed.voidedQuantity != nil ? true : nil)
                    // The listing does not say whether it was a subscription; a void is applied alike.
                    var record = PlayPurchaseRecord(
                        cause: PlayNotificationType.voidedPurchase.rawValue, fetchedAt: Date(), kind: .subscription, packageName: packageName,
                        productID: nil, purchaseToken: token, voided: voided, purchase: nil
                    ).record(externalID: PlayPurchaseRecord.voidedExternalID(voided, token: token))
                    record.origin = .recovery
                    records.append(record)
                    if voided.isPartial { partial.append((voided, token)) }
                }
                report.found += records.count
                try await store.store(records, dryRun: dryRun, into: &report)
                if !dryRun {
                    // Stored beside what was listed, not counted as found.
                    var followed = RecoveryReport()
                    try await store.store(try await statesAfter(partial, packageName: packageName), dryRun: false, into: &followed)
                    report.statesFetched += followed.stored
                }
                // The next page, unless there is none or Google repeats one.
                guard let next = page.tokenPagination?.nextPageToken, !next.isEmpty, seenTokens.insert(next).inserted else { break }
                pageToken = next
            }
        }
        return report
    }

    /// The purchase states that follow listed partial refunds (only a one-time purchase is refunded
    /// by quantity), each fetched once: not again when its row is stored already.
    private func statesAfter(_ voids: [(PlayPurchaseRecord.Voided, token: String)], packageName: String) async throws -> [EventRecord] {
        guard !voids.isEmpty else { return [] }
        let keys = voids.map { EventKey(source: .playPurchase, externalID: PlayPartialRefunds.externalID(after: $0.0, token: $0.token)) }
        let stored = try await store.existing(keys)
        var states: [EventRecord] = []
        for ((voided, token), key) in zip(voids, keys) where !stored.contains(key) {
            guard var state = try await partialRefunds.stateRecord(after: voided, token: token, packageName: packageName) else { continue }
            state.origin = .recovery
            states.append(state)
        }
        return states
    }
}
