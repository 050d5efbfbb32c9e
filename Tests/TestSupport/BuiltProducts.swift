// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// The executables `swift build --build-tests` (scripts/test) put in `.build/debug`.
public enum BuiltProducts {
    public static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/debug")

    public static func path(_ name: String) -> URL { directory.appendingPathComponent(name) }
}
