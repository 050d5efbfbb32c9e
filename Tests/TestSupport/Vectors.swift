// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// The test material in `../shared/vectors/`, read in place (never copied into the project).
public enum Vectors {
    /// `SLUICE_VECTORS_DIR` when set, else `<repository>/../shared/vectors`.
    public static let directory: URL = {
        if let explicit = ProcessInfo.processInfo.environment["SLUICE_VECTORS_DIR"] {
            return URL(fileURLWithPath: explicit)
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("../shared/vectors").standardized
    }()

    public static func url(_ relativePath: String) -> URL {
        directory.appendingPathComponent(relativePath)
    }

    public static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: url(relativePath), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
