// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The figures `scripts/e2e` prints, and whether the run passed.
struct EndToEndReport {
    let sent: [SentEvent]
    let settlement: Settlement.Result
    /// Whether Google took an acknowledgement of every Play purchase.
    let acknowledgements: PlayAcknowledgementCheck.Result
    let forwards: [String: Int]
    let unreadableForwards: Int
    /// Entitlement events that did not verify or could not be read.
    var rejectedEvents = 0
    /// Whether entitlement events were checked (an endpoint secret was given).
    var checksEvents = false
    /// Whether each purchase's currency grant and its `balance.changed` were checked (`--grant`).
    var checksGrants = false
    let pacedSeconds: Double
    /// How long the stream took, until its last event was acknowledged or given up.
    let streamSeconds: Double

    private var acknowledged: [SentEvent] { sent.filter { $0.outcome == .acknowledged && !$0.event.poison } }
    private var poison: [SentEvent] { sent.filter(\.event.poison) }
    private var rejected: [SentEvent] { sent.filter { if case .rejected = $0.outcome { true } else { false } } }
    private var gaveUp: [SentEvent] { sent.filter { if case .gaveUp = $0.outcome { true } else { false } } }

    var passed: Bool {
        rejected.isEmpty && gaveUp.isEmpty && settlement.notApplied.isEmpty && settlement.duplicated.isEmpty
            && settlement.inconsistent.isEmpty && settlement.notForwarded.isEmpty && unreadableForwards == 0
            && settlement.notAnnounced.isEmpty && settlement.announcedTwice.isEmpty && rejectedEvents == 0
            && settlement.balanceNotAnnounced.isEmpty && settlement.balanceAnnouncedTwice.isEmpty
            && acknowledgements.notAcknowledged.isEmpty
    }

    /// One line of `name=value` figures, for a script's table of several runs.
    var summary: String {
        let appleAcknowledged = acknowledged.filter { $0.event.provider == .apple }.count
        return [
            "sent=\(sent.count)", "acknowledged=\(acknowledged.count)", "applied=\(settlement.applied)",
            "forwarded=\(appleAcknowledged - settlement.notForwarded.count)/\(appleAcknowledged)",
            "lost=\(settlement.notApplied.count + settlement.notForwarded.count)", "double_applied=\(settlement.duplicated.count)",
            "announced=\(checksEvents ? "\(acknowledged.count - settlement.notAnnounced.count)/\(acknowledged.count)" : "unchecked")",
            "announced_twice=\(settlement.announcedTwice.count)",
            "grants_announced=\(checksGrants ? "\(acknowledged.count - settlement.balanceNotAnnounced.count)/\(acknowledged.count)" : "unchecked")",
            "grants_announced_twice=\(settlement.balanceAnnouncedTwice.count)",
            "play_acknowledged=\(acknowledgements.tokens - acknowledgements.notAcknowledged.count)/\(acknowledgements.tokens)",
            "rejected=\(rejected.count)", "unacknowledged=\(gaveUp.count)", "poison=\(poison.count)",
            "result=\(passed ? "PASS" : "FAIL")",
        ].joined(separator: " ")
    }

    var text: String {
        let apple = sent.filter { $0.event.provider == .apple }
        let play = sent.filter { $0.event.provider == .play }
        let appleAcknowledged = acknowledged.filter { $0.event.provider == .apple }
        let forwardedMoreThanOnce = forwards.values.filter { $0 > 1 }.count
        let latencies = acknowledged.map(\.ackMilliseconds).sorted()
        func percentile(_ p: Double) -> Double { latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        let pacedAcks = acknowledged.filter { !$0.inBurst }.count
        let burstAcks = acknowledged.count - pacedAcks
        var lines = [
            "sent            \(sent.count) events (\(sent.count - apple.count - play.count) Stripe, \(apple.count) Apple, \(play.count) Google Play), \(sent.filter(\.event.redeliver).count) of them delivered twice"
                + (poison.isEmpty ? "" : ", \(poison.count) poison (\(poison.filter { $0.outcome == .acknowledged }.count) acknowledged)"),
            "acknowledged    \(acknowledged.count)  (rejected \(rejected.count), never acknowledged \(gaveUp.count), retried attempts \(sent.map(\.retries).reduce(0, +)))",
            String(format: "applied         %d (all applied and forwarded %.1f s after the stream ended)", settlement.applied, settlement.seconds),
            "forwarded       \(appleAcknowledged.count - settlement.notForwarded.count) of \(appleAcknowledged.count) Apple notifications (\(forwardedMoreThanOnce) more than once, allowed: at least once)",
            "announced       " + (checksEvents
                ? "\(acknowledged.count - settlement.notAnnounced.count) of \(acknowledged.count) purchases as entitlement.granted (\(settlement.announcedTwice.count) by more than one event; \(rejectedEvents) events refused: bad signature)"
                : "not checked"),
            "grants          " + (checksGrants
                ? "\(acknowledged.count - settlement.balanceNotAnnounced.count) of \(acknowledged.count) purchases' grants announced as balance.changed (\(settlement.balanceAnnouncedTwice.count) by more than one event); each buyer's balance checked through the read API"
                : "not checked"),
            "acknowledged by Google \(acknowledgements.tokens - acknowledgements.notAcknowledged.count) of \(acknowledgements.tokens) Play purchases (\(acknowledgements.refused) requests refused: acknowledged already)",
            "lost            \(settlement.notApplied.count + settlement.notForwarded.count)",
            "duplicated      \(settlement.duplicated.count) (effects applied twice)",
            "inconsistent    \(settlement.inconsistent.count)",
            String(format: "throughput      %.0f events/s through the load balancer over the %.1f s stream (paced part %.0f/s, unpaced part %.0f/s)",
                   Double(acknowledged.count) / max(streamSeconds, 0.001), streamSeconds,
                   pacedSeconds > 0 ? Double(pacedAcks) / pacedSeconds : 0,
                   streamSeconds > pacedSeconds + 1 ? Double(burstAcks) / (streamSeconds - pacedSeconds) : 0),
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
        examples("DUPLICATED", settlement.duplicated.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value) transactions" })
        examples("INCONSISTENT", settlement.inconsistent)
        examples("NOT ANNOUNCED", settlement.notAnnounced)
        examples("NOT ACKNOWLEDGED TO GOOGLE", acknowledgements.notAcknowledged)
        examples("ANNOUNCED TWICE", settlement.announcedTwice.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value) events" })
        examples("GRANT NOT ANNOUNCED", settlement.balanceNotAnnounced)
        examples("GRANT ANNOUNCED TWICE", settlement.balanceAnnouncedTwice.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value) events" })
        if unreadableForwards > 0 { lines.append("UNREADABLE FORWARDS \(unreadableForwards)") }
        lines.append(passed ? "PASS" : "FAIL")
        return lines.joined(separator: "\n")
    }
}

/// Prints a line at once, even into a pipe, so progress interleaves with the calling script's.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
