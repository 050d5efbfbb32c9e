// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// Typed reads of process environment variables.
///
/// Library code never reads the environment itself: the entry points pass
/// `ProcessInfo.processInfo.environment` in, and tests pass a dictionary.
public struct EnvironmentValues: Sendable {
    public let values: [String: String]

    public init(_ values: [String: String]) {
        self.values = values
    }

    /// The variables the secrets may come from as files (the Docker and Kubernetes convention).
    public static let fileVariables = [
        "DATABASE_URL", "STRIPE_WEBHOOK_SECRETS", "API_KEYS", "CLIENT_API_KEYS", "FORWARD_SECRET", "STRIPE_API_KEY",
        "FORWARD_TARGETS", "DATABASE_PASSWORD", "EVENT_SIGNING_KEY", "OPERATOR_KEYS", "READ_DATABASE_URL",
    ]

    /// The process's environment, where each of ``fileVariables`` may instead be given as
    /// `NAME_FILE`, the path of a file holding the value (its trailing newline dropped).
    ///
    /// - Throws: ``ConfigurationError`` naming the variable when both `NAME` and `NAME_FILE` are set,
    ///   or the file cannot be read; never the file's content.
    public static func process(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> EnvironmentValues {
        var values = environment
        for name in fileVariables {
            guard let path = environment[name + "_FILE"], !path.isEmpty else { continue }
            if let direct = environment[name], !direct.isEmpty {
                throw ConfigurationError(variable: name + "_FILE", reason: "is set together with \(name): give one of them")
            }
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError(variable: name + "_FILE", reason: "names a file that cannot be read")
            }
            values[name] = text.trimmingCharacters(in: .newlines)
        }
        return EnvironmentValues(values)
    }

    /// The trimmed value, or `nil` when unset or blank.
    public func string(_ name: String) -> String? {
        guard let value = values[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return value
    }

    public func required(_ name: String) throws -> String {
        guard let value = string(name) else {
            throw ConfigurationError(variable: name, reason: "is required")
        }
        return value
    }

    /// A comma-separated list, blanks dropped.
    public func list(_ name: String) -> [String] {
        guard let value = string(name) else { return [] }
        return value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    public func int(_ name: String, default defaultValue: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text = string(name) else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError(variable: name, reason: "must be a whole number in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`, any case).
    public func bool(_ name: String, default defaultValue: Bool) throws -> Bool {
        guard let text = string(name)?.lowercased() else { return defaultValue }
        switch text {
        case "true", "1", "yes", "on": return true
        case "false", "0", "no", "off": return false
        default: throw ConfigurationError(variable: name, reason: "must be true or false")
        }
    }

    public func double(_ name: String, default defaultValue: Double, range: ClosedRange<Double>) throws -> Double {
        guard let text = string(name) else { return defaultValue }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw ConfigurationError(variable: name, reason: "must be a number in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }
}

