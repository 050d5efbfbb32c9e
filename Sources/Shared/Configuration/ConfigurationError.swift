// SPDX-License-Identifier: Apache-2.0

/// A configuration value that cannot be used; the message names the variable, never its value
/// (a listen address, which is no secret, is the one exception: ``NamedListener``).
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    public var variable: String
    public var reason: String

    public init(variable: String, reason: String) {
        self.variable = variable
        self.reason = reason
    }

    public var description: String { "\(variable) \(reason)" }
}
