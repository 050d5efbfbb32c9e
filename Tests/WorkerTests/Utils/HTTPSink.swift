// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import TestSupport

/// A real HTTP server on a free local port that records every request it receives and answers as
/// the test tells it: the stand-in for a downstream server that Sluice forwards to.
final class HTTPSink: Sendable {
    /// One request as it arrived.
    struct Received: Sendable {
        var headers: HTTPFields
        var body: [UInt8]
        /// When the request had arrived whole.
        var arrivedAt = ContinuousClock.now

        func header(_ name: String) -> String? { HTTPField.Name(name).flatMap { headers[$0] } }
    }

    /// How to answer one request.
    struct Answer: Sendable {
        var status: HTTPResponse.Status
        var headers: HTTPFields = [:]
        var body: [UInt8] = []
        /// Wait this long before answering (a slow target).
        var delay: Duration? = nil

        static let ok = Answer(status: .ok)
    }

    private struct State {
        var received: [Received] = []
        /// Answers the `n`th request (1-based).
        var answer: @Sendable (Int) -> Answer = { _ in .ok }
    }

    private let state = Mutex(State())
    /// The URL to forward to, known once the server listens.
    let url: String

    private init(url: String) {
        self.url = url
    }

    var received: [Received] { state.withLock { $0.received } }

    /// Changes how the following requests are answered.
    func answer(_ answer: @escaping @Sendable (Int) -> Answer) {
        state.withLock { $0.answer = answer }
    }

    private func receive(_ request: Received) -> Answer {
        state.withLock { state in
            state.received.append(request)
            return state.answer(state.received.count)
        }
    }

    /// Runs a sink for the duration of `body`.
    static func with<Result: Sendable>(
        path: String = "/hooks/apple", _ body: @Sendable @escaping (HTTPSink) async throws -> Result
    ) async throws -> Result {
        let box = Mutex<HTTPSink?>(nil)
        let router = Router()
        router.post(RouterPath(path)) { request, _ -> Response in
            let body = try await request.body.collect(upTo: 16 * 1024 * 1024)
            guard let sink = box.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            let answer = sink.receive(Received(headers: request.headers, body: Array(body.readableBytesView)))
            if let delay = answer.delay { try await Task.sleep(for: delay) }
            return Response(status: answer.status, headers: answer.headers, body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
        }
        return try await LocalHTTPServer.run(router) { base in
            let sink = HTTPSink(url: base + path)
            box.withLock { $0 = sink }
            return try await body(sink)
        }
    }
}
