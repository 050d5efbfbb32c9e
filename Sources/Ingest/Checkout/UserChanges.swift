// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Shared
import Synchronization

/// Wakes requests waiting on a user's checkout (`GET /v1/iap/transactions/{id}?wait=`) as soon
/// as the worker commits a change of that user: it LISTENs on `sluice_user_changed`, which
/// the triggers of sql/functions/sluice_notify_user_changed.sql notify with the user id of each transaction and entitlement written.
///
/// Without LISTEN (a transaction-mode pooler, a lost connection) waiters still look every
/// ``pollInterval``; a (re)connected listener wakes every waiter once, for what it may have missed.
final class UserChanges: Service, CustomStringConvertible, Sendable {
    static let channel = "sluice_user_changed"
    /// How often a waiter looks again without a notification.
    let pollInterval: Duration

    private let client: PostgresClient
    private let logger: Logger
    private let waiters = Mutex<(next: UInt64, byUser: [String: [UInt64: AsyncStream<Void>.Continuation]])>((0, [:]))

    var description: String { "UserChanges" }

    init(client: PostgresClient, pollInterval: Duration = .seconds(1), logger: Logger) {
        self.pollInterval = pollInterval
        self.client = client
        self.logger = logger
    }

    func run() async throws {
        // The listen loop ends only when cancelled: a graceful shutdown cancels it.
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await self.client.withConnection { connection in
                        try await connection.listen(on: Self.channel) { notifications in
                            self.wakeAll()
                            for try await notification in notifications { self.wake(notification.payload) }
                        }
                    }
                } catch {
                    if Task.isCancelled { return }
                    self.logger.debug("LISTEN \(Self.channel) lost, reconnecting", metadata: ["error": "\(String(reflecting: error))"])
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Calls `settled` now, then after each change of `userID` (or each ``pollInterval``) until it
    /// returns a value or `timeout` passes; then once more.
    func wait<Value: Sendable>(
        for userID: String, timeout: Duration, _ settled: @Sendable @escaping () async throws -> Value?
    ) async throws -> Value? {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = waiters.withLock { state in
            state.next += 1
            state.byUser[userID, default: [:]][state.next] = continuation
            return state.next
        }
        defer {
            waiters.withLock { state in
                state.byUser[userID]?[id] = nil
                if state.byUser[userID]?.isEmpty == true { state.byUser[userID] = nil }
            }
            continuation.finish()
        }
        if let value = try await settled() { return value }
        let found = try? await withCancellingTimeout(timeout) { () -> Value? in
            try await withThrowingTaskGroup(of: Void.self) { group in
                // The poll: a wake-up every interval, in case a notification cannot come.
                group.addTask {
                    while !Task.isCancelled {
                        try await Task.sleep(for: self.pollInterval)
                        continuation.yield()
                    }
                }
                defer { group.cancelAll() }
                for await _ in stream {
                    if let value = try await settled() { return value }
                }
                return nil
            }
        }
        if let found { return found }
        return try await settled()
    }

    private func wake(_ userID: String) {
        for continuation in waiters.withLock({ Array(($0.byUser[userID] ?? [:]).values) }) { continuation.yield() }
    }

    private func wakeAll() {
        for continuation in waiters.withLock({ $0.byUser.values.flatMap(\.values) }) { continuation.yield() }
    }
}
