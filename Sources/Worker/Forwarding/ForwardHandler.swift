// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Shared

/// Sends one delivery: `POST` of the original body to its target with the Standard Webhooks headers.
///
/// Any `2xx` completes the delivery. `429` and `503` with a `Retry-After` retry after that delay
/// (at most `RETRY_MAX_SECONDS`); every other status, a timeout or a refused connection retries
/// with backoff, until `MAX_ATTEMPTS` makes it dead. One HTTP client serves every delivery, so
/// connections to a target are reused.
struct ForwardHandler: JobHandler {
    let http: HTTPClient
    let signer: StandardWebhookSigner?
    /// `FORWARD_TIMEOUT_SECONDS`: the whole exchange, from connecting to the end of the answer.
    let timeout: Duration
    /// The longest `Retry-After` honoured as it is.
    let maxRetryAfterSeconds: Double
    let metrics: WorkerMetrics?
    let logger: Logger

    func handle(_ job: ClaimedJob, completion: JobCompletion) async throws {
        guard let target = job.attributes["target"], let webhookID = job.attributes["external_id"] else {
            throw AttemptFailure(reason: "the delivery row names no target or webhook id")
        }
        let label = ForwardTarget.label(for: target)
        let request = makeRequest(job, target: target, webhookID: webhookID)
        let started = ContinuousClock.now
        let status: Int
        do {
            let response = try await http.execute(request, timeout: .init(timeout), logger: logger)
            status = Int(response.status.code)
            // Read the answer to its end, keeping none of it, so the connection goes back to the pool.
            for try await _ in response.body {}
            metrics?.countDelivery(target: label, statusClass: "\(status / 100)xx", duration: started.duration(to: .now))
            guard (200..<300).contains(status) else {
                throw AttemptFailure(
                    reason: "\(label) answered \(status)", retryAfterSeconds: retryAfter(status: status, headers: response.headers),
                    httpStatus: status)
            }
        } catch let failure as AttemptFailure {
            throw failure
        } catch {
            let timedOut = Self.isTimeout(error)
            metrics?.countDelivery(target: label, statusClass: timedOut ? "timeout" : "connection_error", duration: started.duration(to: .now))
            throw AttemptFailure(reason: timedOut ? "\(label) did not answer within \(timeout)" : "\(label) could not be reached: \(error)")
        }
        logger.debug("forwarded", metadata: ["target": "\(label)", "status": "\(status)"])
    }

    private func makeRequest(_ job: ClaimedJob, target: String, webhookID: String) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: target)
        request.method = .POST
        let timestamp = Int64(Date().timeIntervalSince1970)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Sluice")
        request.headers.add(name: "webhook-id", value: webhookID)
        request.headers.add(name: "webhook-timestamp", value: "\(timestamp)")
        if let signer {
            request.headers.add(
                name: "webhook-signature", value: signer.signature(id: webhookID, timestamp: timestamp, body: job.payload.readableBytesView))
        }
        request.body = .bytes(job.payload)
        return request
    }

    /// The delay a `429` or `503` asks for, when it says.
    private func retryAfter(status: Int, headers: HTTPHeaders) -> Double? {
        guard status == 429 || status == 503, let value = headers.first(name: "Retry-After") else { return nil }
        return RetryAfter.seconds(value, maximum: maxRetryAfterSeconds)
    }

    private static func isTimeout(_ error: any Error) -> Bool {
        guard let error = error as? HTTPClientError else { return false }
        return [.deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout].contains(error)
    }
}
