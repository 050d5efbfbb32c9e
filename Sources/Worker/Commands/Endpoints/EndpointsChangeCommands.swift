// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `worker endpoints update ID …`: changes the URL, filters, rate limit or description.
struct EndpointsUpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update", abstract: "Change an endpoint's URL, filters, rate limit or description.", discussion: OperatorSession.help)

    @OptionGroup var endpoint: EndpointArgument

    @Option(help: "A new absolute http:// or https:// URL.")
    var url: String?

    @OptionGroup var options: EndpointOptions
    @OptionGroup var output: JSONFlag

    func validate() throws {
        if let url, !Endpoint.validURL(url) { throw ValidationError("--url must be an absolute http:// or https:// URL") }
        if let url { try options.checkReach(of: url) }
    }

    func run() async throws {
        var changes = try options.changes()
        changes.url = url
        let updated = try await OperatorSession.with { [endpoint, changes] client, logger in
            guard let updated = try await EndpointStore(client: client, logger: logger).update(endpoint.id, changes) else {
                throw CommandFailure("no endpoint \(Endpoint.name(endpoint.id))")
            }
            return updated
        }
        try printEndpoint(EndpointOutput(endpoint: updated), json: output.json)
    }
}

/// `worker endpoints disable ID`: its deliveries wait (none is lost) until it is enabled.
struct EndpointsDisableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disable", abstract: "Stop delivering to an endpoint; its deliveries wait.", discussion: OperatorSession.help)

    @OptionGroup var endpoint: EndpointArgument
    @OptionGroup var output: JSONFlag

    func run() async throws {
        let changed = try await setDisabled(endpoint, reason: "disabled by an operator")
        try printEndpoint(EndpointOutput(endpoint: changed), json: output.json)
    }
}

/// `worker endpoints enable ID`: delivering again, waiting deliveries first.
struct EndpointsEnableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enable", abstract: "Deliver to an endpoint again.", discussion: OperatorSession.help)

    @OptionGroup var endpoint: EndpointArgument
    @OptionGroup var output: JSONFlag

    func run() async throws {
        let changed = try await setDisabled(endpoint, reason: nil)
        try printEndpoint(EndpointOutput(endpoint: changed), json: output.json)
    }
}

private func setDisabled(_ endpoint: EndpointArgument, reason: String?) async throws -> Endpoint {
    try await OperatorSession.with { client, logger in
        guard let changed = try await EndpointStore(client: client, logger: logger).setDisabled(endpoint.id, reason: reason) else {
            throw CommandFailure("no endpoint \(Endpoint.name(endpoint.id))")
        }
        return changed
    }
}

/// `worker endpoints rotate-secret ID [--grace 24h]`: a new secret, printed once; the old one signs too during the grace.
struct EndpointsRotateSecretCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-secret", abstract: "Give an endpoint a new secret; both sign during the grace period.",
        discussion: OperatorSession.help)

    @OptionGroup var endpoint: EndpointArgument

    @Option(help: "How long the old secret still signs: 90s, 30m, 24h, 3d (default 24h; 0s ends it now).")
    var grace = "24h"

    @OptionGroup var output: JSONFlag

    func validate() throws {
        guard TimeExpression.seconds(grace) != nil else { throw ValidationError("--grace must be a duration such as 24h") }
    }

    func run() async throws {
        let graceSeconds = TimeExpression.seconds(grace) ?? 86_400
        let secret = Endpoint.newSecret()
        let rotated = try await OperatorSession.with { [endpoint] client, logger in
            guard let rotated = try await EndpointStore(client: client, logger: logger).rotateSecret(
                endpoint.id, newSecret: secret, graceSeconds: graceSeconds)
            else { throw CommandFailure("no endpoint \(Endpoint.name(endpoint.id))") }
            return rotated
        }
        try printEndpoint(EndpointOutput(endpoint: rotated, secret: secret), json: output.json)
    }
}

/// `worker endpoints remove ID`: gone, with its deliveries not yet sent.
struct EndpointsRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove an endpoint and its unsent deliveries.", discussion: OperatorSession.help)

    @OptionGroup var endpoint: EndpointArgument

    func run() async throws {
        let removed = try await OperatorSession.with { [endpoint] client, logger in
            try await EndpointStore(client: client, logger: logger).remove(endpoint.id)
        }
        guard removed else { throw CommandFailure("no endpoint \(Endpoint.name(endpoint.id))") }
        OperatorSession.show("removed \(Endpoint.name(endpoint.id))")
    }
}

/// `worker endpoints resend ID --since TIME …`: queues again what the endpoint should have received in a window.
struct EndpointsResendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resend", abstract: "Queue again the events of a window for an endpoint.", discussion: OperatorSession.help)

    @OptionGroup var endpoint: EndpointArgument

    @Option(help: "Events since then: RFC 3339 or a duration ago (90s, 30m, 2h, 7d).")
    var since: String

    @Option(help: "Events before then (default: now).")
    var until: String?

    @Option(help: "Comma-separated types (default: every type the endpoint takes).")
    var types: String?

    @Flag(name: .customLong("failed-only"), help: "Only events whose delivery to this endpoint is dead or discarded.")
    var failedOnly = false

    @Flag(name: .customLong("dry-run"), help: "Count, queue nothing.")
    var dryRun = false

    func validate() throws {
        guard TimeExpression.pointInTime(since) != nil else { throw ValidationError("--since must be RFC 3339 or a duration like 2h") }
        if let until, TimeExpression.pointInTime(until) == nil { throw ValidationError("--until must be RFC 3339 or a duration like 1h") }
    }

    func run() async throws {
        let window = EndpointStore.ResendWindow(
            since: TimeExpression.pointInTime(since) ?? Date(), until: until.flatMap { TimeExpression.pointInTime($0) },
            types: types.map(EndpointOptions.list) ?? [], failedOnly: failedOnly)
        let count = try await OperatorSession.with { [endpoint, dryRun] client, logger in
            let store = EndpointStore(client: client, logger: logger)
            return try await store.resend(try await endpoint.load(store), window, dryRun: dryRun)
        }
        OperatorSession.show(dryRun ? "would queue \(count) deliveries" : "queued \(count) deliveries")
    }
}
