// SPDX-License-Identifier: Apache-2.0
import Foundation

extension RevocationFlights {
    /// What to do about a chain's revocation status, decided without I/O: answer from what is
    /// remembered, run the one check of the chain, or wait for the check already running.
    ///
    /// A good answer is remembered until the OCSP answers' `nextUpdate` (at most
    /// ``AppleRevocationCheck/maximumReliance``); a revoked one as long; no usable answer
    /// (`revocation_unknown`) for ``negativeReliance`` only, so that a burst of posts during a
    /// responder outage costs one request, and the next post after it asks again.
    struct StateMachine: Sendable {
        typealias Key = [UInt8]
        typealias WaiterID = Int

        enum Answer: Sendable, Equatable {
            case good
            case failed(Rejection)
        }

        enum BeginAction: Sendable, Equatable {
            /// Remembered: no request.
            case answer(Answer)
            /// The caller checks, then calls ``finish(_:answer:now:goodUntil:)``.
            case check
            /// A check is running; the caller waits for its answer.
            case wait
        }

        private enum Entry {
            case checking(waiters: [WaiterID])
            case settled(Answer, until: Date)
        }

        /// How long no usable answer is remembered.
        static let negativeReliance: TimeInterval = 10
        /// Chains remembered at most; Apple signs with a handful of leaves at a time.
        static let capacity = 64

        private var entries: [Key: Entry] = [:]

        /// Whether a check of `key` is running (for tests).
        func isChecking(_ key: Key) -> Bool {
            if case .checking = entries[key] { return true }
            return false
        }

        mutating func begin(_ key: Key, waiter: WaiterID, now: Date) -> BeginAction {
            switch entries[key] {
            case .settled(let answer, let until) where now < until:
                return .answer(answer)
            case .checking(var waiters):
                waiters.append(waiter)
                entries[key] = .checking(waiters: waiters)
                return .wait
            case .settled, nil:
                entries[key] = .checking(waiters: [])
                return .check
            }
        }

        /// The check of `key` ended with `answer`.
        ///
        /// - Parameters:
        ///   - goodUntil: for a good answer, until when its OCSP answers hold.
        ///   - remember: `false` when the check was cut short (its caller was cancelled), so that
        ///     its failure says nothing about the responder.
        /// - Returns: the waiters to give the answer to.
        mutating func finish(_ key: Key, answer: Answer, now: Date, goodUntil: Date, remember: Bool = true) -> [WaiterID] {
            guard case .checking(let waiters) = entries[key] else { return [] }
            let until: Date = switch answer {
            case .good: goodUntil
            case .failed(let rejection) where rejection.reason == .revoked: now.addingTimeInterval(AppleRevocationCheck.maximumReliance)
            case .failed: now.addingTimeInterval(Self.negativeReliance)
            }
            if remember {
                entries[key] = .settled(answer, until: until)
            } else {
                entries[key] = nil
            }
            trim(now: now, keeping: key)
            return waiters
        }

        /// A waiter gave up (its task was cancelled).
        ///
        /// - Returns: whether it was still waiting, and so must be answered by the caller.
        mutating func cancel(_ key: Key, waiter: WaiterID) -> Bool {
            guard case .checking(var waiters) = entries[key], let index = waiters.firstIndex(of: waiter) else { return false }
            waiters.remove(at: index)
            entries[key] = .checking(waiters: waiters)
            return true
        }

        /// Forgets expired answers, then other answers, while over ``capacity``; never a running
        /// check, nor the answer just settled (`kept`).
        private mutating func trim(now: Date, keeping kept: Key) {
            guard entries.count > Self.capacity else { return }
            entries = entries.filter { if case .settled(_, let until) = $0.value { until > now || $0.key == kept } else { true } }
            while entries.count > Self.capacity,
                  let settled = entries.first(where: { if case .settled = $0.value { $0.key != kept } else { false } }) {
                entries[settled.key] = nil
            }
        }
    }
}
