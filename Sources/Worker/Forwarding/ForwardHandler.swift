// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Shared

/// Sends one delivery: `POST` of its body to its endpoint (or, for a forward made before
/// endpoints existed, its `target`) with the Standard Webhooks headers, signed with the
/// endpoint's secret (both secrets during a rotation's grace).
///
/// The endpoint is read for every delivery, so a change made with `worker endpoints` applies to
/// the next one. A failure starts or continues the endpoint's failure run; one that has lasted
/// `ENDPOINT_DISABLE_AFTER` disables the endpoint (logged, and counted in
/// `sluice_endpoints_disabled_total`).
///
/// Any `2xx` completes the delivery. `429` and `503` with a `Retry-After` retry after that delay
/// (at most `RETRY_MAX_SECONDS`); every other status, a timeout or a refused connection retries
/// with backoff, until `MAX_ATTEMPTS` makes it dead. One HTTP client serves every delivery that
/// may reach any address, another every other delivery (``DeliveryClients``: an endpoint not added
/// with `--allow-private` is refused a private address on every connection), so connections to a
/// target are reused.
struct ForwardHandler: JobHandler {
    let http: DeliveryClients
    /// `FORWARD_SECRET`, for deliveries made before endpoints existed.
    let signer: StandardWebhookSigner?
    let endpoints: EndpointStore
    /// `ENDPOINT_DISABLE_AFTER`, in seconds.
    let disableAfterSeconds: Double
    let rateLimiter: EndpointRateLimiter
    /// `FORWARD_TIMEOUT_SECONDS`: the whole exchange, from connecting to the end of the answer.
    let timeout: Duration
    /// The longest `Retry-After` honoured as it is.
    let maxRetryAfterSeconds: Double
    let metrics: WorkerMetrics?
    let logger: Logger

    func handle(_ job: ClaimedJob, completion: JobCompletion) async throws {
        guard let webhookID = job.externalID else {
            throw AttemptFailure(reason: "the delivery row names no webhook id")
        }
        var target = job[.target]
        var signer = self.signer
        var endpoint: Endpoint?
        if let id = job[.endpointID].flatMap(Int64.init) {
            guard let found = try await endpoints.endpoint(id) else {
                throw AttemptFailure(reason: "endpoint \(Endpoint.name(id)) was removed")
            }
            guard found.disabledAt == nil else {
                throw AttemptFailure(reason: "endpoint \(found.name) is disabled", retryAfterSeconds: 5)
            }
            endpoint = found
            target = found.url
            let secrets = found.signingSecrets(at: Date())
            signer = secrets.isEmpty ? nil : try StandardWebhookSigner(secret: secrets.joined(separator: ","))
            if let limit = found.maxPerSecond { try await rateLimiter.waitForSlot(endpoint: id, maxPerSecond: limit) }
        }
        guard let target else { throw AttemptFailure(reason: "the delivery row names no target") }
        let label = endpoint?.name ?? ForwardTarget.label(for: target)
        do {
            let status = try await send(
                job, to: target, label: label, webhookID: webhookID, signer: signer, on: http.client(for: endpoint))
            completion.recordAnswer(httpStatus: status)
        } catch {
            if let endpoint { try await recordFailure(of: endpoint) }
            throw error
        }
        if let endpoint, endpoint.failingSince != nil { try await endpoints.recordSuccess(endpoint.id) }
    }

    /// - Returns: the 2xx status the endpoint answered.
    private func send(
        _ job: ClaimedJob, to target: String, label: String, webhookID: String, signer: StandardWebhookSigner?, on http: HTTPClient
    ) async throws -> Int {
        let request = makeRequest(job, target: target, webhookID: webhookID, signer: signer)
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
                    reason: "\(label) \(HTTPFailureText.answered(status))", retryAfterSeconds: retryAfter(status: status, headers: response.headers),
                    httpStatus: status)
            }
        } catch let failure as AttemptFailure {
            throw failure
        } catch {
            let timedOut = Self.isTimeout(error)
            metrics?.countDelivery(target: label, statusClass: timedOut ? "timeout" : "connection_error", duration: started.duration(to: .now))
            throw AttemptFailure(reason: "\(label): " + HTTPFailureText.describe(error, peer: HTTPFailureText.peer(of: target), timeout: timeout))
        }
        logger.debug("forwarded", metadata: ["target": "\(label)", "status": "\(status)"])
        return status
    }

    /// Continues the endpoint's failure run, and says so loudly when it disables the endpoint.
    private func recordFailure(of endpoint: Endpoint) async throws {
        guard try await endpoints.recordFailure(endpoint.id, disableAfter: disableAfterSeconds) else { return }
        metrics?.countEndpointDisabled(endpoint: endpoint.name)
        logger.error("endpoint disabled: its deliveries have failed for ENDPOINT_DISABLE_AFTER", metadata: [
            "endpoint": "\(endpoint.name)", "description": "\(endpoint.description ?? "")",
            "failing_since": "\(endpoint.failingSince.map { $0.formatted(.iso8601) } ?? "now")",
        ])
    }

    private func makeRequest(_ job: ClaimedJob, target: String, webhookID: String, signer: StandardWebhookSigner?) -> HTTPClientRequest {
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
