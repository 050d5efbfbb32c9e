// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `worker endpoints …`: the endpoints that receive outgoing events, changed at run time.
struct EndpointsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "endpoints",
        abstract: "Manage the endpoints that receive entitlement and transaction events (docs/webhooks.md).",
        discussion: """
            Running workers pick every change up at their next delivery. Endpoints are named ep_<id> \
            (a bare number works too).

            \(OperatorSession.help)
            """,
        subcommands: [
            EndpointsAddCommand.self, EndpointsListCommand.self, EndpointsShowCommand.self, EndpointsUpdateCommand.self,
            EndpointsDisableCommand.self, EndpointsEnableCommand.self, EndpointsRotateSecretCommand.self, EndpointsRemoveCommand.self,
            EndpointsResendCommand.self,
        ])
}

/// The endpoint an operator names, as an argument.
struct EndpointArgument: ParsableArguments {
    @Argument(help: "The endpoint: ep_<id> or its number.")
    var endpoint: String

    func validate() throws {
        guard Endpoint.id(named: endpoint) != nil else { throw ValidationError("\(endpoint) is not an endpoint id (ep_12 or 12)") }
    }

    var id: Int64 { Endpoint.id(named: endpoint) ?? 0 }
}

/// `--json`.
struct JSONFlag: ParsableArguments {
    @Flag(help: "Print JSON.")
    var json = false
}

/// The filters and options `add` and `update` share.
struct EndpointOptions: ParsableArguments {
    @Option(help: "Comma-separated type patterns: entitlement.*, transaction.refunded, * (default: every type).")
    var events: String?

    @Option(help: "Comma-separated providers: stripe, apple, google_play (default: all).")
    var source: String?

    @Option(help: "production, sandbox or all (default all).")
    var environment: String?

    @Option(name: .customLong("max-per-second"), help: "At most this many deliveries a second, per worker process (0: no limit).")
    var maxPerSecond: Int?

    @Option(help: "A name for operators; shown in logs, never the URL.")
    var description: String?

    @Flag(
        name: .customLong("allow-private"), inversion: .prefixedNo,
        help: "Let it reach loopback, private and link-local addresses (refused by default, checked on every connection after DNS).")
    var allowPrivate: Bool?

    func validate() throws {
        _ = try changes()
    }

    /// The changes these options name; usage errors (exit 2) for values that are not one.
    func changes() throws -> EndpointStore.Changes {
        var changes = EndpointStore.Changes()
        if let events {
            let patterns = Self.list(events)
            if let wrong = patterns.first(where: { !OutgoingEventType.isValid(pattern: $0) }) {
                throw ValidationError("--events: \(wrong) matches no event type (see docs/webhooks.md)")
            }
            changes.eventTypes = patterns
        }
        if let source {
            let sources = Self.list(source)
            if let wrong = sources.first(where: { StoreProvider(rawValue: $0) == nil }) {
                throw ValidationError("--source: \(wrong) is not one of \(StoreProvider.names)")
            }
            changes.sources = sources
        }
        if let environment {
            guard let scope = Endpoint.EnvironmentScope(rawValue: environment) else {
                throw ValidationError("--environment must be production, sandbox or all")
            }
            changes.environment = scope
        }
        if let maxPerSecond {
            guard (0...10_000).contains(maxPerSecond) else { throw ValidationError("--max-per-second must be in 0...10000") }
            changes.maxPerSecond = .some(maxPerSecond == 0 ? nil : maxPerSecond)
        }
        changes.description = description
        changes.allowPrivate = allowPrivate
        return changes
    }

    /// Refuses a URL whose host is written as an address an endpoint may not reach (or is
    /// `localhost`), unless `--allow-private` is given. A name is checked when it is connected to.
    func checkReach(of url: String) throws {
        if let host = PrivateAddress.literalPrivateHost(of: url), allowPrivate != true {
            throw ValidationError("\(host) is a loopback, private or link-local address: give --allow-private if this endpoint is meant to reach inside")
        }
    }

    static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

/// An endpoint as operators see it; the secret only where it is printed once.
struct EndpointOutput: Encodable {
    let endpoint: Endpoint
    var secret: String?

    enum CodingKeys: String, CodingKey {
        case id, url, description, events, sources, environment, raw_apple, allow_private, max_per_second, managed_by, enabled, disabled_at
        case disabled_reason, failing_since, created_at, secret, previous_secret_expires_at
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(endpoint.name, forKey: .id)
        // The operator's own output: the whole URL, as given (logs and metrics name the endpoint only).
        try c.encode(endpoint.url, forKey: .url)
        try c.encode(endpoint.description, forKey: .description)
        // What an empty filter means, as the text says it: every type, both providers.
        try c.encode(endpoint.eventTypes.isEmpty ? ["*"] : endpoint.eventTypes, forKey: .events)
        try c.encode(endpoint.sources.isEmpty ? StoreProvider.allCases.map(\.rawValue) : endpoint.sources, forKey: .sources)
        try c.encode(endpoint.environment.rawValue, forKey: .environment)
        try c.encode(endpoint.rawApple, forKey: .raw_apple)
        try c.encode(endpoint.allowPrivate, forKey: .allow_private)
        try c.encode(endpoint.maxPerSecond, forKey: .max_per_second)
        try c.encode(endpoint.managedBy, forKey: .managed_by)
        try c.encode(endpoint.disabledAt == nil, forKey: .enabled)
        try c.encode(endpoint.disabledAt, forKey: .disabled_at)
        try c.encode(endpoint.disabledReason, forKey: .disabled_reason)
        try c.encode(endpoint.failingSince, forKey: .failing_since)
        try c.encode(endpoint.createdAt, forKey: .created_at)
        try c.encode(endpoint.previousSecretExpiresAt.flatMap { $0 > Date() ? $0 : nil }, forKey: .previous_secret_expires_at)
        if let secret { try c.encode(secret, forKey: .secret) }
    }

    /// Lines for a person.
    var text: String {
        let e = endpoint
        var lines = [
            "\(e.name)  \(e.disabledAt == nil ? "enabled" : "disabled (\(e.disabledReason ?? "by an operator"))")",
            "  url          \(e.url)",
            "  description  \(e.description ?? "-")",
            "  receives     \(e.rawApple ? "Apple notifications (raw)" : (e.eventTypes.isEmpty ? "every event" : e.eventTypes.joined(separator: ", ")))",
            "  sources      \(e.sources.isEmpty ? StoreProvider.names : e.sources.joined(separator: ", "))   environment \(e.environment.rawValue)",
            "  rate limit   \(e.maxPerSecond.map { "\($0)/s per worker" } ?? "none")",
        ]
        if let failing = e.failingSince { lines.append("  failing since \(failing.formatted(.iso8601))") }
        if let secret { lines.append("  secret       \(secret)   (shown once: store it now)") }
        return lines.joined(separator: "\n")
    }
}

extension EndpointArgument {
    /// The endpoint, or a failure (exit 1) naming the id.
    func load(_ store: EndpointStore) async throws -> Endpoint {
        guard let endpoint = try await store.endpoint(id) else { throw CommandFailure("no endpoint \(Endpoint.name(id))") }
        return endpoint
    }
}

/// Prints one endpoint, as text or JSON.
func printEndpoint(_ output: EndpointOutput, json: Bool) throws {
    OperatorSession.show(json ? try OperatorSession.json(output) : output.text)
}
