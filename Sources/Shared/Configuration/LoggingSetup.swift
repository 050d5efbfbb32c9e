// SPDX-License-Identifier: Apache-2.0
import Foundation
public import Logging

/// Builds loggers from `LOG_LEVEL` and `LOG_FORMAT` for the process entry points.
public enum LoggingSetup {
    /// Checks `LOG_LEVEL` (`trace`…`critical`, default `info`) and `LOG_FORMAT` (`json` or `text`, default `json`).
    public static func validate(environment: EnvironmentValues) throws -> (level: String, format: String) {
        let level = environment.string("LOG_LEVEL")?.lowercased() ?? "info"
        guard Logger.Level(rawValue: level) != nil else {
            throw ConfigurationError(variable: "LOG_LEVEL", reason: "must be trace, debug, info, notice, warning, error or critical")
        }
        let format = environment.string("LOG_FORMAT")?.lowercased() ?? "json"
        guard format == "json" || format == "text" else {
            throw ConfigurationError(variable: "LOG_FORMAT", reason: "must be json or text")
        }
        return (level, format)
    }

    /// Bootstraps the process-wide logging backend once; call before making any logger.
    public static func bootstrap(level: String, format: String) {
        let logLevel = Logger.Level(rawValue: level) ?? .info
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = format == "json" ? JSONLogHandler(label: label) : StreamLogHandler.standardError(label: label)
            handler.logLevel = logLevel
            return handler
        }
    }
}

/// One JSON object per line on standard error: `{"ts","level","label","msg",…metadata}`.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    let label: String

    public init(label: String) {
        self.label = label
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var object: [String: String] = [:]
        for (key, value) in metadata { object[key] = "\(value)" }
        for (key, value) in event.metadata ?? [:] { object[key] = "\(value)" }
        object["ts"] = Date().formatted(.iso8601)
        object["level"] = event.level.rawValue
        object["label"] = label
        object["msg"] = "\(event.message)"
        guard var line = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        line.append(UInt8(ascii: "\n"))
        FileHandle.standardError.write(line)
    }
}
