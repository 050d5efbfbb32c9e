// SPDX-License-Identifier: Apache-2.0
import Prometheus
import Synchronization

/// A Prometheus counter per label set, each made once and then found by its key: asking the
/// registry on every request (`makeCounter(descriptor:labels:)`) builds the label array and looks
/// the counter up by its rendered name each time.
final class LabeledCounters<Key: Hashable & Sendable>: Sendable {
    private let counters = Mutex<[Key: Counter]>([:])
    private let make: @Sendable (Key) -> Counter

    /// - Parameter make: the registry's counter for a key; called once per key.
    init(make: @escaping @Sendable (Key) -> Counter) {
        self.make = make
    }

    /// The counter of `key`, made on first use.
    subscript(key: Key) -> Counter {
        if let counter = counters.withLock({ $0[key] }) { return counter }
        // Made outside the lock; the registry returns the same counter to a racing caller.
        let counter = make(key)
        counters.withLock { $0[key] = counter }
        return counter
    }
}
