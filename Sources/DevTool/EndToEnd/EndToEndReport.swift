// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The figures `scripts/e2e` prints, and whether the run passed.
struct EndToEndReport {
    let sent: [SentEvent]
    let settlement: Settlement.Result
    let forwards: [String: Int]
    let unreadableForwards: Int
    let pacedSeconds: Double
    let burstSeconds: Double

    private var acknowledged: [SentEvent] { sent.filter { $0.outcome == .acknowledged } }
    private var rejected: [SentEvent] { sent.filter { if case .rejected = $0.outcome { true } else { false } } }
    private var gaveUp: [SentEvent] { sent.filter { if case .gaveUp = $0.outcome { true } else { false } } }

    var passed: Bool {
        rejected.isEmpty && gaveUp.isEmpty && settlement.notApplied.isEmpty && settlement.duplicated.isEmpty
            && settlement.inconsistent.isEmpty && settlement.notForwarded.isEmpty && unreadableForwards == 0
    }

    var text: String {
        let apple = sent.filter { $0.event.provider == .apple }
        let appleAcknowledged = acknowledged.filter { $0.event.provider == .apple }
        let forwardedMoreThanOnce = forwards.values.filter { $0 > 1 }.count
        let latencies = acknowledged.map(\.ackMilliseconds).sorted()
        func percentile(_ p: Double) -> Double { latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        let pacedAcks = acknowledged.filter { !$0.inBurst }.count
        let burstAcks = acknowledged.count - pacedAcks
        var lines = [
            "sent            \(sent.count) events (\(sent.count - apple.count) Stripe, \(apple.count) Apple), \(sent.filter(\.event.redeliver).count) of them delivered twice",
            "acknowledged    \(acknowledged.count)  (rejected \(rejected.count), never acknowledged \(gaveUp.count), retried attempts \(sent.map(\.retries).reduce(0, +)))",
            "applied         \(settlement.applied)",
            "forwarded       \(appleAcknowledged.count - settlement.notForwarded.count) of \(appleAcknowledged.count) Apple notifications (\(forwardedMoreThanOnce) more than once, allowed: at least once)",
            "lost            \(settlement.notApplied.count + settlement.notForwarded.count)",
            "duplicated      \(settlement.duplicated.count)",
            "inconsistent    \(settlement.inconsistent.count)",
            String(format: "throughput      %.0f events/s paced (offered), %.0f events/s unpaced burst through the load balancer",
                   Double(pacedAcks) / max(pacedSeconds, 0.001), Double(burstAcks) / max(burstSeconds, 0.001)),
            String(format: "ack latency     p50 %.1f ms, p99 %.1f ms, max %.1f ms (retries included)", percentile(0.5), percentile(0.99), latencies.last ?? 0),
        ]
        func examples(_ title: String, _ items: [String]) {
            guard !items.isEmpty else { return }
            lines.append("\(title) (\(items.count)), first ones:")
            lines += items.prefix(5).map { "  \($0)" }
        }
        examples("REJECTED", rejected.map { "\($0.event.provider.rawValue) \($0.event.user): \($0.outcome)" })
        examples("NEVER ACKNOWLEDGED", gaveUp.map { "\($0.event.provider.rawValue) \($0.event.user): \($0.outcome)" })
        examples("LOST (acknowledged, not applied)", settlement.notApplied)
        examples("NOT FORWARDED", settlement.notForwarded)
        examples("DUPLICATED", settlement.duplicated)
        examples("INCONSISTENT", settlement.inconsistent)
        if unreadableForwards > 0 { lines.append("UNREADABLE FORWARDS \(unreadableForwards)") }
        lines.append(passed ? "PASS" : "FAIL")
        return lines.joined(separator: "\n")
    }
}

/// Prints a line at once, even into a pipe, so progress interleaves with the calling script's.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
