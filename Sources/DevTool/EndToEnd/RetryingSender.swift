// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import DevSupport
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// Delivers one event as Stripe and Apple do: retries on connection errors, timeouts, `429` and
/// `5xx` with a growing delay, stops at the first other answer or at the deadline.
struct RetryingSender: Sendable {
    enum Outcome: Sendable, Equatable {
        /// A `2xx`: ingest committed it.
        case acknowledged
        /// A `4xx` other than 429: refused for good.
        case rejected(status: Int, body: String)
        /// No acknowledgement before the deadline.
        case gaveUp(lastError: String)
    }

    /// Signs a Google Play push's OIDC token afresh for each attempt, as Pub/Sub does.
    struct PushSigner: Sendable {
        let google: GoogleOIDCStandIn
        let audience: String
        let account: String
    }

    let client: HTTPClient
    let baseURL: String
    let stripeSecret: String
    var pushSigner: PushSigner?

    /// - Returns: the outcome and how many attempts were retried.
    func deliver(_ event: PlannedEvent, until deadline: ContinuousClock.Instant) async -> (Outcome, retries: Int) {
        var attempt = 0
        var lastError = "not sent"
        while ContinuousClock.now < deadline {
            attempt += 1
            do {
                let response = try await client.execute(request(for: event), timeout: .seconds(10))
                let body = try await response.body.collect(upTo: 1 << 16)
                let status = Int(response.status.code)
                switch status {
                case 200..<300:
                    return (.acknowledged, attempt - 1)
                case 429, 500..<600:
                    lastError = "HTTP \(status)"
                default:
                    return (.rejected(status: status, body: String(buffer: body)), attempt - 1)
                }
            } catch {
                lastError = "\(error)"
            }
            let delay = min(2_000, 50 << min(attempt, 6))
            try? await Task.sleep(for: .milliseconds(Int.random(in: delay / 2...delay)))
        }
        return (.gaveUp(lastError: lastError), max(attempt - 1, 0))
    }

    private func request(for event: PlannedEvent) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: baseURL + event.path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if event.provider == .stripe {
            request.headers.add(name: "Stripe-Signature", value: StripeSigner.header(body: event.body, secret: stripeSecret))
        }
        if event.provider == .play, let pushSigner, let token = try? pushSigner.google.idToken(audience: pushSigner.audience, email: pushSigner.account) {
            request.headers.add(name: "Authorization", value: "Bearer " + token)
        }
        request.body = .bytes(ByteBuffer(data: event.body))
        return request
    }
}
