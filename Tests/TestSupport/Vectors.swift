// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// The public test material: `Tests/Vectors/` in this repository (with its SOURCES.md), and the
/// directory `SLUICE_EXTRA_VECTORS` names, when set, for the few files that may not be copied
/// here (they come from a repository without a license; see SOURCES.md, "Not carried").
public enum Vectors {
    /// `Tests/Vectors`, or `SLUICE_VECTORS_DIR` when set.
    public static let directory: URL = {
        if let explicit = ProcessInfo.processInfo.environment["SLUICE_VECTORS_DIR"] {
            return URL(fileURLWithPath: explicit)
        }
        return repository.appendingPathComponent("Tests/Vectors")
    }()

    /// `SLUICE_EXTRA_VECTORS`: files read in place and never copied, or `nil`.
    public static let extraDirectory: URL? = ProcessInfo.processInfo.environment["SLUICE_EXTRA_VECTORS"].map { URL(fileURLWithPath: $0) }

    /// The repository's root.
    public static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The file in this repository's vectors, else in `SLUICE_EXTRA_VECTORS`.
    public static func url(_ relativePath: String) -> URL {
        let own = directory.appendingPathComponent(relativePath)
        guard !FileManager.default.fileExists(atPath: own.path), let extraDirectory else { return own }
        return extraDirectory.appendingPathComponent(relativePath)
    }

    /// Whether the file can be read here (for tests of files that are not carried in the repository).
    public static func exists(_ relativePath: String) -> Bool {
        FileManager.default.fileExists(atPath: url(relativePath).path)
    }

    public static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: url(relativePath), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
