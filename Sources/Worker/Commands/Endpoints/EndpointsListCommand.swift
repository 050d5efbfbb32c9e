// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `worker endpoints list`: every endpoint, with its health.
struct EndpointsListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the endpoints.", discussion: OperatorSession.help)

    @OptionGroup var output: JSONFlag

    func run() async throws {
        let endpoints = try await OperatorSession.with { client, logger in try await EndpointStore(client: client, logger: logger).all() }
        if output.json {
            OperatorSession.show(try OperatorSession.json(endpoints.map { EndpointOutput(endpoint: $0) }))
            return
        }
        guard !endpoints.isEmpty else {
            OperatorSession.show("no endpoints (add one with: worker endpoints add URL)")
            return
        }
        var table = TextTable("ID", "STATE", "RECEIVES", "ENV", "DESCRIPTION")
        for e in endpoints {
            table.add(
                e.name, e.disabledAt != nil ? "disabled" : (e.failingSince != nil ? "failing" : "enabled"),
                e.rawApple ? "raw apple" : (e.eventTypes.isEmpty ? "*" : e.eventTypes.joined(separator: ",")), e.environment.rawValue,
                e.description ?? "")
        }
        OperatorSession.show(table.rendered)
    }
}

/// `worker endpoints show ID`.
struct EndpointsShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show one endpoint.", discussion: OperatorSession.help)

    @OptionGroup var endpoint: EndpointArgument
    @OptionGroup var output: JSONFlag

    func run() async throws {
        let found = try await OperatorSession.with { [endpoint] client, logger in try await endpoint.load(EndpointStore(client: client, logger: logger)) }
        try printEndpoint(EndpointOutput(endpoint: found), json: output.json)
    }
}
