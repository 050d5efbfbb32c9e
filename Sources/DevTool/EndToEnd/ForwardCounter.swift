// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Shared
import Synchronization
import NIOFoundationCompat

/// The downstream server Sluice forwards Apple notifications to: answers `200` and counts each
/// notification by its `notificationUUID`, read from the forwarded `signedPayload`. It is also
/// the endpoint of `entitlement.granted` and `balance.changed` events: it verifies each one's
/// signature and keeps, per user, the distinct event ids of each type it received (one state
/// change, one ledger row, must be announced once, however often its delivery is repeated).
final class ForwardCounter: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    private let unreadable = Atomic<Int>(0)
    private let grants = Mutex<[String: Set<String>]>([:])
    private let balanceChanges = Mutex<[String: Set<String>]>([:])
    private let badSignatures = Atomic<Int>(0)
    /// The endpoint's secret; without one, entitlement events are counted unverified.
    let eventsSecret: String?

    init(eventsSecret: String? = nil) {
        self.eventsSecret = eventsSecret
    }

    /// The distinct `entitlement.granted` event ids received for each user.
    var grantsByUser: [String: Set<String>] { grants.withLock { $0 } }
    /// The distinct `balance.changed` event ids received for each user.
    var balanceChangesByUser: [String: Set<String>] { balanceChanges.withLock { $0 } }
    /// Entitlement events whose signature did not verify, or that could not be read.
    var rejectedEventCount: Int { badSignatures.load(ordering: .relaxed) }

    /// Records one delivery of an entitlement event.
    func recordEvent(body: ByteBuffer, id: String?, timestamp: String?, signature: String?) {
        struct Event: Decodable {
            struct Payload: Decodable {
                struct Owner: Decodable { let user_id: String? }
                let entitlement: Owner?
                let balance_transaction: Owner?
            }
            let id: String
            let type: String
            let data: Payload
        }
        let bytes = Array(body.readableBytesView)
        let verified = eventsSecret.map { secret in
            guard let id, let timestamp = timestamp.flatMap({ Int64($0) }), let signature else { return false }
            return StandardWebhooksReceiver.verifies(id: id, timestamp: timestamp, body: bytes, signatureHeader: signature, secret: secret)
        } ?? true
        guard verified, let event = try? JSONDecoder().decode(Event.self, from: Data(bytes)), event.id == id else {
            badSignatures.add(1, ordering: .relaxed)
            return
        }
        switch event.type {
        case "entitlement.granted":
            guard let user = event.data.entitlement?.user_id else { return }
            grants.withLock { _ = $0[user, default: []].insert(event.id) }
        case "balance.changed":
            guard let user = event.data.balance_transaction?.user_id else { return }
            balanceChanges.withLock { _ = $0[user, default: []].insert(event.id) }
        default:
            return
        }
    }

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

    /// Serves `POST {path}` (raw notifications) and `POST {eventsPath}` (outgoing events) on
    /// `127.0.0.1:port` until the task is cancelled.
    func serve(port: Int, path: String, eventsPath: String) async throws {
        let router = Router()
        router.post(RouterPath(path)) { [self] request, _ -> Response in
            record(body: try await request.body.collect(upTo: 4 << 20))
            return Response(status: .ok)
        }
        router.post(RouterPath(eventsPath)) { [self] request, _ -> Response in
            let headers = request.headers
            func header(_ name: String) -> String? { HTTPField.Name(name).flatMap { headers[$0] } }
            recordEvent(
                body: try await request.body.collect(upTo: 4 << 20), id: header("webhook-id"), timestamp: header("webhook-timestamp"),
                signature: header("webhook-signature"))
            return Response(status: .ok)
        }
        var logger = Logger(label: "forward-sink")
        logger.logLevel = .critical  // being cancelled at the end logs errors that are not

        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        try await app.runService(gracefulShutdownSignals: [])
    }
}
