// SPDX-License-Identifier: Apache-2.0
import Shared

/// One row of the endpoint tables (the overview's and `/endpoints`).
struct EndpointRow: Sendable {
    var id: Int64
    var name: String
    var description: String
    /// As `worker endpoints list` shows it: no credentials, path or query.
    var url: String
    var receives: String
    var health: String
    var healthClass: String
    var waiting: Int
    var dead: Int

    init(_ health: ConsoleOverview.EndpointHealth) {
        let endpoint = health.endpoint
        id = endpoint.id
        name = endpoint.name
        description = endpoint.description ?? ""
        url = URLLabel.of(endpoint.url)
        receives =
            endpoint.rawApple ? "Apple notifications (raw)" : (endpoint.eventTypes.isEmpty ? "every event" : endpoint.eventTypes.joined(separator: ", "))
        (self.health, healthClass) = health.health
        waiting = health.waiting
        dead = health.dead
    }
}

/// `/endpoints`.
struct EndpointListPage: ConsolePage {
    static let template = ConsoleTemplate.endpoints
    var endpoints: [EndpointRow]
    var hasEndpoints: Bool

    init(_ health: [ConsoleOverview.EndpointHealth]) {
        endpoints = health.map(EndpointRow.init)
        hasEndpoints = !endpoints.isEmpty
    }
}

/// `/endpoints/{id}`: the endpoint, its actions and its newest deliveries.
struct EndpointPage: ConsolePage {
    static let template = ConsoleTemplate.endpoint

    /// A delivery with the HTTP status of a done one's success or of a failed one's last attempt;
    /// latency is from the delivery's creation to its success.
    struct DeliveryRow: Sendable {
        var id: Int64
        var type: String
        var message: String
        var state: String
        var stateClass: String
        var attempts: Int32
        var lastError: String
        var created: String
        var latency: String
        var status: String
    }

    var endpoint: EndpointRow
    var sources: String
    var environment: String
    var rateLimit: String
    var enabled: Bool
    var deliveries: [DeliveryRow]
    var hasDeliveries: Bool

    init(_ endpoint: Endpoint, health: ConsoleOverview.EndpointHealth, deliveries: [DeliveryRow]) {
        self.endpoint = EndpointRow(health)
        sources = endpoint.sources.isEmpty ? StoreProvider.names : endpoint.sources.joined(separator: ", ")
        environment = endpoint.environment.rawValue
        rateLimit = endpoint.maxPerSecond.map { "\($0)/s per worker" } ?? "none"
        enabled = endpoint.disabledAt == nil
        self.deliveries = deliveries
        hasDeliveries = !deliveries.isEmpty
    }
}
