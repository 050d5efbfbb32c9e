// SPDX-License-Identifier: Apache-2.0

/// A statement that must return a row returned none.
public struct StateStoreError: Error, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }

    public init(reason: String) {
        self.reason = reason
    }
}
