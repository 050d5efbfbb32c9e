// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Raised once, read from any task: whether something has happened yet.
public final class Flag: Sendable {
    private let raised = Atomic(false)

    public init() {}

    public func raise() { raised.store(true, ordering: .sequentiallyConsistent) }

    public var isRaised: Bool { raised.load(ordering: .sequentiallyConsistent) }
}
