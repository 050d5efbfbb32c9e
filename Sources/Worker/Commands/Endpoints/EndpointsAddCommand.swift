// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `worker endpoints add URL …`: a new endpoint with its own secret, printed once.
struct EndpointsAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add an endpoint; prints its id and its secret (once).", discussion: OperatorSession.help)

    @Argument(help: "An absolute http:// or https:// URL.")
    var url: String

    @OptionGroup var options: EndpointOptions

    @Flag(name: .customLong("raw-apple"), help: "Receive Apple's notifications ({\"signedPayload\":…}, the JWS unchanged) instead of entitlement events.")
    var rawApple = false

    @Option(name: .customLong("backfill-since"), help: "Also queue the events since then (RFC 3339 or a duration ago); default: only new ones.")
    var backfillSince: String?

    @OptionGroup var output: JSONFlag

    func validate() throws {
        guard Endpoint.validURL(url) else { throw ValidationError("the URL must be an absolute http:// or https:// URL") }
        try options.checkReach(of: url)
        if let backfillSince, TimeExpression.pointInTime(backfillSince) == nil {
            throw ValidationError("--backfill-since must be RFC 3339 or a duration like 2d")
        }
    }

    func run() async throws {
        var changes = try options.changes()
        changes.rawApple = rawApple
        let since = backfillSince.flatMap { TimeExpression.pointInTime($0) }
        let (endpoint, secret, queued) = try await OperatorSession.with { [url, changes] client, logger in
            let store = EndpointStore(client: client, logger: logger)
            let secret = Endpoint.newSecret()
            let endpoint = try await store.add(url: url, changes: changes, secret: secret)
            let queued = try await since.asyncMap { try await store.resend(endpoint, .init(since: $0), dryRun: false) }
            return (endpoint, secret, queued)
        }
        try printEndpoint(EndpointOutput(endpoint: endpoint, secret: secret), json: output.json)
        if let queued, !output.json { OperatorSession.show("backfill: \(queued) deliveries queued") }
    }
}
