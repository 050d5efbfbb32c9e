// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Hummingbird
import Logging

/// Google's side of the end-to-end run, when Play is exercised: the OIDC keys ingest verifies
/// pushes with, and the OAuth token endpoint and Play Developer API the workers call, on one port.
struct GoogleStandIns: Sendable {
    let oidc: GoogleOIDCStandIn
    let api: GooglePlayAPIStandIn

    func serve(port: Int) async throws {
        let router = Router()
        oidc.addRoutes(to: router)
        api.addRoutes(to: router)
        var logger = Logger(label: "google-stand-in")
        logger.logLevel = .critical  // being cancelled at the end logs errors that are not
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
            .runService(gracefulShutdownSignals: [])
    }
}

/// Waits until Google took an acknowledgement of every acknowledged Play purchase, or the
/// deadline passes; a purchase Google never took one for is lost work (Google refunds it).
struct PlayAcknowledgementCheck: Sendable {
    struct Result: Sendable {
        var tokens = 0
        /// Purchases Google never took an acknowledgement for.
        var notAcknowledged: [String] = []
        /// Acknowledgement requests Google refused (one already acknowledged, asked again).
        var refused = 0
    }

    let api: GooglePlayAPIStandIn?
    let seconds: Double

    func run(_ tokens: [String]) async -> Result {
        guard let api, !tokens.isEmpty else { return Result() }
        let unique = Set(tokens)
        let deadline = ContinuousClock.now + .seconds(seconds)
        var missing = unique
        while ContinuousClock.now < deadline {
            let taken = api.acknowledgements
            missing = unique.filter { taken[$0, default: 0] == 0 }
            if missing.isEmpty { break }
            try? await Task.sleep(for: .seconds(1))
        }
        let requests = api.acknowledgementRequests, taken = api.acknowledgements
        let refused = unique.reduce(0) { $0 + requests[$1, default: 0] - taken[$1, default: 0] }
        return Result(tokens: unique.count, notAcknowledged: missing.sorted(), refused: refused)
    }
}
