// SPDX-License-Identifier: Apache-2.0

/// The queue columns a job carries besides its payload, by name: an event's (``QueueName/events``)
/// and a delivery's (``QueueName/deliveries``). The names are the queues' ``QueueName``
/// `attributeColumns`, read here and nowhere else.
extension ClaimedJob {
    /// An event's columns.
    public enum EventColumn: String, CaseIterable, Sendable {
        case type
        case externalID = "external_id"
        case origin
        case proof
        case orderingKey = "ordering_key"
    }

    /// A delivery's columns.
    public enum DeliveryColumn: String, CaseIterable, Sendable {
        case target
        case externalID = "external_id"
        case endpointID = "endpoint_id"
    }

    public subscript(_ column: EventColumn) -> String? { attributes[column.rawValue] }

    public subscript(_ column: DeliveryColumn) -> String? { attributes[column.rawValue] }

    /// The provider's event type (an Apple `notificationType`, a Stripe `type`).
    public var eventType: String? { self[EventColumn.type] }
    /// The provider's id of the event (Stripe `evt_…`, Apple `notificationUUID`), or a delivery's `webhook-id`.
    public var externalID: String? { self[EventColumn.externalID] }
    /// Who stored the event (``EventOrigin``): a webhook, recovery, reconciliation.
    public var origin: String? { self[EventColumn.origin] }
    /// The event's row proof (`EVENT_SIGNING_KEY`), hex.
    public var proof: String? { self[EventColumn.proof] }
    /// The entity the provider's event is about, which batches keep together.
    public var orderingKey: String? { self[EventColumn.orderingKey] }
}
