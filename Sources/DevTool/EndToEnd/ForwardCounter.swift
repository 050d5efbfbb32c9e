// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Logging
import NIOCore
import Shared
import Synchronization
import NIOFoundationCompat

/// The downstream server Sluice forwards Apple notifications to: answers `200` and counts each
/// notification by its `notificationUUID`, read from the forwarded `signedPayload`.
final class ForwardCounter: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    private let unreadable = Atomic<Int>(0)

    /// How often each notification arrived.
    var received: [String: Int] { counts.withLock { $0 } }
    /// Requests whose body was not a notification.
    var unreadableCount: Int { unreadable.load(ordering: .relaxed) }

    func record(body: ByteBuffer) {
        guard let uuid = Self.notificationUUID(in: Data(buffer: body)) else {
            unreadable.add(1, ordering: .relaxed)
            return
        }
        counts.withLock { $0[uuid, default: 0] += 1 }
    }

    /// The `notificationUUID` inside `{"signedPayload":"header.payload.signature"}`, unverified:
    /// ingest verified it before it was stored.
    static func notificationUUID(in body: Data) -> String? {
        struct Body: Decodable { let signedPayload: String }
        struct Payload: Decodable { let notificationUUID: String }
        guard let envelope = try? JSONDecoder().decode(Body.self, from: body) else { return nil }
        let parts = envelope.signedPayload.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let json = Base64URL.decode(parts[1]) else { return nil }
        return (try? JSONDecoder().decode(Payload.self, from: Data(json)))?.notificationUUID
    }

    /// Serves `POST {path}` on `127.0.0.1:port` until the task is cancelled.
    func serve(port: Int, path: String) async throws {
        let router = Router()
        router.post(RouterPath(path)) { [self] request, _ -> Response in
            record(body: try await request.body.collect(upTo: 4 << 20))
            return Response(status: .ok)
        }
        var logger = Logger(label: "forward-sink")
        logger.logLevel = .critical  // being cancelled at the end logs errors that are not

        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        try await app.runService(gracefulShutdownSignals: [])
    }
}
