// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `worker dlq drain [--output FILE]`: dead items as NDJSON, then marked `discarded` (kept, never deleted).
struct DLQDrainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drain",
        abstract: "Write dead items as NDJSON, then mark them discarded (kept, never deleted).",
        discussion: """
            Each line is one item with its payload (as text and base64) and every attempt. Items are \
            marked discarded only after their line is written (and, with --output, synced to disk).

            \(OperatorSession.help)
            """)

    @Option(help: "Write to this file (appended to) instead of standard output.")
    var output: String?

    @OptionGroup var filter: QueueFilterOptions

    func run() async throws {
        let filter = try self.filter.filter()
        let sink = try NDJSONSink(path: output)
        let drained = try await OperatorSession.with { client, logger in
            try await DeadLetters(client: client, logger: logger).drain(filter) { batch in
                try sink.write(batch.map { try OperatorSession.json($0) })
            }
        }
        try sink.close()
        FileHandle.standardError.write(Data("drained \(drained)\n".utf8))
    }
}

/// Lines to a file (synced after every batch) or to standard output.
final class NDJSONSink: Sendable {
    private let handle: FileHandle
    private let isFile: Bool

    init(path: String?) throws {
        guard let path else {
            handle = FileHandle.standardOutput
            isFile = false
            return
        }
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else { throw CommandFailure("cannot create \(path)") }
        }
        guard let handle = FileHandle(forWritingAtPath: path) else { throw CommandFailure("cannot write \(path)") }
        try handle.seekToEnd()
        self.handle = handle
        isFile = true
    }

    func write(_ lines: [String]) throws {
        guard !lines.isEmpty else { return }
        try handle.write(contentsOf: Data((lines.joined(separator: "\n") + "\n").utf8))
        if isFile { try handle.synchronize() }
    }

    func close() throws {
        if isFile { try handle.close() }
    }
}
