// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import Shared

/// Recovers Stripe events from `GET /v1/events` (30 days of history), for the platform and each
/// connected account in `STRIPE_ACCOUNTS`. They are stored as their JSON came, marked as
/// recovered (they carry no signature: the authenticated API call is their proof).
struct StripeRecovery: Sendable {
    let api: StripeAPI
    let accounts: [String]
    let store: RecoveredEventStore

    static let retention: TimeInterval = 30 * 86_400

    func recover(from start: Date, to end: Date, dryRun: Bool, logger: Logger) async throws -> RecoveryReport {
        let start = max(start, end.addingTimeInterval(-Self.retention + 3_600))
        var report = RecoveryReport()
        guard start < end else { return report }
        for account in [nil] + accounts.map(Optional.some) {
            var after: String?
            repeat {
                let page = try await api.events(createdSince: start, account: account, startingAfter: after, logger: logger)
                var records: [EventRecord] = []
                for json in page.events {
                    report.found += 1
                    do {
                        var record = try Self.record(json, account: account)
                        guard record.eventTime.map({ $0 <= end }) ?? true else {
                            report.found -= 1
                            continue
                        }
                        record.origin = .recovery
                        records.append(record)
                    } catch let rejection as Rejection {
                        report.rejected[rejection.reason.code, default: 0] += 1
                        logger.warning("recovered Stripe event rejected", metadata: ["detail": "\(rejection.message)"])
                    }
                }
                try await store.store(records, dryRun: dryRun, into: &report)
                after = page.hasMore ? page.lastID : nil
            } while after != nil
        }
        return report
    }

    /// The queue row of one event; a connected account's event says its account, as its webhook would.
    static func record(_ json: Data, account: String?) throws -> EventRecord {
        var body = json
        if let account, var object = try? JSONSerialization.jsonObject(with: json) as? [String: Any], object["account"] == nil {
            object["account"] = account
            body = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        }
        let buffer = ByteBuffer(data: body)
        return try StripeEventEnvelope.decode(buffer).record(payload: buffer)
    }
}
