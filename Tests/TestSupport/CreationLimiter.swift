// SPDX-License-Identifier: Apache-2.0

/// Lets at most `limit` tasks at a time run a section, the others waiting their turn in order.
///
/// Test databases are created and migrated through it: when every suite starts at once, a burst
/// of CREATE DATABASE (each writes megabytes of WAL) and migrations otherwise slows PostgreSQL's
/// commits on a two-core machine past the timeouts that tests exercise (ingest's 5 s store timeout).
actor CreationLimiter {
    private let limit: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(limit: Int) {
        self.limit = limit
    }

    func run<Result: Sendable>(_ body: @Sendable () async throws -> Result) async throws -> Result {
        if running < limit {
            running += 1
        } else {
            // The finishing task hands its place over, so `running` stays counted.
            await withCheckedContinuation { waiting.append($0) }
        }
        defer { finish() }
        return try await body()
    }

    private func finish() {
        if waiting.isEmpty {
            running -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
