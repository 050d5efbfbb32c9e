// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Waits until every acknowledged event is applied (read API) and every acknowledged Apple
/// notification forwarded (sink), or the deadline passes; classifies each event.
struct Settlement: Sendable {
    struct Result: Sendable {
        var applied = 0
        /// Users whose event made more than one transaction, with the count.
        var duplicated: [String: Int] = [:]
        var inconsistent: [String] = []
        /// Acknowledged, never applied: lost.
        var notApplied: [String] = []
        /// Acknowledged Apple notifications the sink never received.
        var notForwarded: [String] = []
        /// Users whose purchase was never announced (`entitlement.granted`), when events are checked.
        var notAnnounced: [String] = []
        /// Users whose one purchase was announced by more than one event, with the count.
        var announcedTwice: [String: Int] = [:]
        /// Users whose grant was never announced (`balance.changed`), when grants are checked.
        var balanceNotAnnounced: [String] = []
        /// Users whose one grant was announced by more than one `balance.changed`, with the count.
        var balanceAnnouncedTwice: [String: Int] = [:]
        /// From the end of the stream until everything was applied and forwarded (or the deadline).
        var seconds: Double = 0
    }

    let checker: EffectChecker
    let forwards: ForwardCounter
    let seconds: Double
    /// Read API requests in flight.
    let concurrency = 16
    /// Events checked a round before the round may stop at a pending one (``checkUntilPending(_:)``).
    var chunk: Int { concurrency * 4 }

    func run(_ acknowledged: [PlannedEvent]) async -> Result {
        var result = Result()
        var unapplied = acknowledged
        var unforwarded = acknowledged.compactMap(\.notificationUUID)
        var unannounced = forwards.eventsSecret == nil ? [] : acknowledged.map(\.user)
        let checksBalances = forwards.eventsSecret != nil && checker.grant != nil
        var balanceUnannounced = checksBalances ? acknowledged.map(\.user) : []
        var waiting: Bool { !(unapplied.isEmpty && unforwarded.isEmpty && unannounced.isEmpty && balanceUnannounced.isEmpty) }
        let started = ContinuousClock.now
        let deadline = started + .seconds(seconds)
        var lastReport = ContinuousClock.now
        while ContinuousClock.now < deadline && waiting {
            let (effects, unchecked) = await checkUntilPending(unapplied)
            unapplied = unchecked
            for (event, effect) in effects {
                switch effect {
                case .applied: result.applied += 1
                case .duplicated(let count): result.duplicated[event.user] = count
                case .inconsistent(let why): result.inconsistent.append(why)
                case .pending, nil: unapplied.append(event)
                }
            }
            let received = forwards.received
            unforwarded.removeAll { received[$0, default: 0] > 0 }
            let grants = forwards.grantsByUser
            unannounced.removeAll { grants[$0] != nil }
            let balanceChanges = forwards.balanceChangesByUser
            balanceUnannounced.removeAll { balanceChanges[$0] != nil }
            if lastReport.duration(to: .now) > .seconds(5) {
                say("  waiting: \(unapplied.count) not applied yet, \(unforwarded.count) not forwarded yet, \(unannounced.count) not announced yet"
                    + (checksBalances ? ", \(balanceUnannounced.count) grants not announced yet" : ""))
                lastReport = .now
            }
            if waiting { try? await Task.sleep(for: .seconds(1)) }
        }
        let elapsed = started.duration(to: .now)
        result.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        result.notApplied = unapplied.map { "\($0.provider.rawValue) event for \($0.user)" }
        result.notForwarded = unforwarded
        result.notAnnounced = unannounced
        result.balanceNotAnnounced = balanceUnannounced
        if forwards.eventsSecret != nil {
            let grants = forwards.grantsByUser
            for event in acknowledged { if let ids = grants[event.user], ids.count > 1 { result.announcedTwice[event.user] = ids.count } }
        }
        if checksBalances {
            let balanceChanges = forwards.balanceChangesByUser
            for event in acknowledged {
                if let ids = balanceChanges[event.user], ids.count > 1 { result.balanceAnnouncedTwice[event.user] = ids.count }
            }
        }
        // Once more over everything: an event applied again after it was first seen shows here, and
        // so does a grant made again (a buyer holding more than one).
        for (event, effect) in await check(acknowledged) {
            switch effect {
            case .duplicated(let count)?: result.duplicated[event.user] = count
            case .inconsistent(let why)? where !result.inconsistent.contains(why): result.inconsistent.append(why)
            default: break
            }
        }
        return result
    }

    /// The effects of `events`, a chunk at a time in the order sent, until a chunk holds one not
    /// applied yet; and the events after that chunk, unchecked. The queue applies roughly in the
    /// order events arrived, so while the workers drain, a round asks the read API about one chunk,
    /// not about every event still pending: thousands of reads a second would take the CPU the
    /// workers drain with (2 cores run the whole cluster in CI).
    private func checkUntilPending(_ events: [PlannedEvent]) async -> (checked: [(PlannedEvent, EffectChecker.Effect?)], unchecked: [PlannedEvent]) {
        var checked: [(PlannedEvent, EffectChecker.Effect?)] = []
        var start = events.startIndex
        while start < events.endIndex {
            let end = min(start + chunk, events.endIndex)
            let effects = await check(Array(events[start..<end]))
            checked += effects
            start = end
            if effects.contains(where: { $0.1 == nil || $0.1 == .pending }) { break }
        }
        return (checked, Array(events[start...]))
    }

    /// The effect of each event; `nil` where the read API could not be asked (checked again later).
    private func check(_ events: [PlannedEvent]) async -> [(PlannedEvent, EffectChecker.Effect?)] {
        await withTaskGroup(of: (PlannedEvent, EffectChecker.Effect?).self) { group in
            var results: [(PlannedEvent, EffectChecker.Effect?)] = []
            var iterator = events.makeIterator()
            func addNext() -> Bool {
                guard let event = iterator.next() else { return false }
                group.addTask { (event, try? await checker.effect(of: event)) }
                return true
            }
            for _ in 0..<concurrency where addNext() {}
            while let result = await group.next() {
                results.append(result)
                _ = addNext()
            }
            return results
        }
    }
}
