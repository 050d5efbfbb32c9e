// SPDX-License-Identifier: Apache-2.0
public import AsyncHTTPClient
public import Foundation
public import Logging
public import NIOCore
import NIOHTTP1

/// An answer of a provider API that is not a success, after retries.
public struct ProviderAPIError: Error, CustomStringConvertible {
    public var provider: String
    /// The HTTP status, or `nil` when no answer came (connection error, timeout).
    public var status: Int?
    public var message: String
    public init(provider: String, status: Int?, message: String) {
        self.provider = provider
        self.status = status
        self.message = message
    }

    public var description: String { "\(provider) API: " + (status.map { "HTTP \($0): " } ?? "") + message }

    /// Whether the provider was unavailable (no answer, or an answer ``ProviderCall`` retries:
    /// `429`, `5xx`), so that asking again later may succeed; otherwise it refused.
    public var isUnavailable: Bool { status.map(ProviderCall.asksToRetry) ?? true }
}

/// One call to a provider API, retried as the providers ask: `429` after its `Retry-After`
/// (seconds, an HTTP date, or Apple's UNIX time in milliseconds) or with backoff, `5xx` and
/// connection errors with backoff, at most ``maximumAttempts`` times. Other answers are returned
/// to the caller as they are. A call whose task is cancelled (the worker stopping) throws
/// `CancellationError`: it is neither counted as an error nor tried again.
public struct ProviderCall: Sendable {
    public var http: HTTPClient
    public var provider: String
    public var timeout: TimeAmount = .seconds(30)
    public var maximumAttempts = 4
    /// The first retry's delay; doubled each time, capped at ``maximumDelay``.
    public var baseDelay: Duration = .milliseconds(500)
    public var maximumDelay: Duration = .seconds(30)

    /// An answer that asks to be tried again: `429`, or any `5xx`.
    public static func asksToRetry(_ status: Int) -> Bool { status == 429 || status >= 500 }

    /// Counts every answer that was not a success, by status (`0` for no answer).
    public var onError: @Sendable (Int) -> Void = { _ in }

    public init(
        http: HTTPClient, provider: String, timeout: TimeAmount = .seconds(30), maximumAttempts: Int = 4,
        baseDelay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(30), onError: @escaping @Sendable (Int) -> Void = { _ in }
    ) {
        self.http = http
        self.provider = provider
        self.timeout = timeout
        self.maximumAttempts = maximumAttempts
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.onError = onError
    }

    /// - Returns: the final status and body (at most 16 MiB).
    public func send(_ request: HTTPClientRequest, logger: Logger) async throws -> (status: Int, body: ByteBuffer) {
        var attempt = 1
        while true {
            let delay: Duration
            do {
                let response = try await http.execute(request, timeout: timeout)
                let body = try await response.body.collect(upTo: 16 << 20)
                let status = Int(response.status.code)
                guard Self.asksToRetry(status) else {
                    if status >= 300 { onError(status) }
                    return (status, body)
                }
                onError(status)
                guard attempt < maximumAttempts else {
                    throw ProviderAPIError(provider: provider, status: status, message: "gave up after \(attempt) attempts")
                }
                delay = Self.retryAfter(response.headers.first(name: "Retry-After"), cap: maximumDelay) ?? backoff(attempt)
                logger.notice("provider API asked to retry", metadata: [
                    "provider": "\(provider)", "status": "\(status)", "attempt": "\(attempt)"])
            } catch let error as ProviderAPIError {
                throw error
            } catch {
                // Cut short by a worker stopping: no answer to count, nothing to try again.
                if Task.isCancelled { throw CancellationError() }
                onError(0)
                guard attempt < maximumAttempts else {
                    throw ProviderAPIError(provider: provider, status: nil, message: "no answer after \(attempt) attempts: \(error)")
                }
                delay = backoff(attempt)
            }
            try await Task.sleep(for: delay)
            attempt += 1
        }
    }

    private func backoff(_ attempt: Int) -> Duration {
        min(baseDelay * (1 << min(attempt - 1, 16)), maximumDelay)
    }

    /// A `Retry-After` value: seconds, an HTTP date, or (Apple) a UNIX time in milliseconds.
    public static func retryAfter(_ value: String?, now: Date = Date(), cap: Duration) -> Duration? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        let capSeconds = Double(cap.components.seconds)
        if let number = Double(text), number.isFinite {
            // A number past the year 2001 in milliseconds is a time, not a delay.
            let seconds = number > 1_000_000_000_000 ? number / 1000 - now.timeIntervalSince1970 : number
            return .milliseconds(Int64(min(max(seconds, 0), capSeconds) * 1000))
        }
        return RetryAfter.seconds(text, now: now, maximum: capSeconds).map { .milliseconds(Int64($0 * 1000)) }
    }
}
