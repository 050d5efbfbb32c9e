// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A stored Stripe event, decoded: its envelope and its `data.object`.
struct StripeEvent: Sendable {
    var eventID: Int64
    /// `evt_…`.
    var id: String
    var type: String
    /// Stripe `created`: the time that orders events of one object.
    var created: Date
    /// The connected account, for Connect events.
    var account: String?
    /// `false` for test-mode events.
    var livemode: Bool
    /// The API version the object is rendered in (`2024-06-20`, `2025-03-31.basil`, …); informative
    /// only: every object is read in every shape it has had (``StripeObjectKind``).
    var apiVersion: String?
    var object: JSONValue
    /// `data.previous_attributes` of `*.updated` events: the fields that changed, with their old values.
    var previousAttributes: JSONValue

    private struct Envelope: Decodable {
        struct DataField: Decodable {
            var object: JSONValue
            var previous_attributes: JSONValue?
        }
        var id: String
        var type: String
        var created: Int64
        var account: String?
        var livemode: Bool?
        var api_version: String?
        var data: DataField
    }

    init(
        eventID: Int64, id: String, type: String, created: Date, account: String? = nil, livemode: Bool = true,
        apiVersion: String? = nil, object: JSONValue, previousAttributes: JSONValue = .null
    ) {
        self.eventID = eventID
        self.id = id
        self.type = type
        self.created = created
        self.account = account
        self.livemode = livemode
        self.apiVersion = apiVersion
        self.object = object
        self.previousAttributes = previousAttributes
    }

    /// - Throws: a decoding error when the stored body is not a Stripe event (ingest checked it was).
    init(eventID: Int64, body: Data) throws {
        let envelope = try JSONDecoder().decode(Envelope.self, from: body)
        self.init(
            eventID: eventID, id: envelope.id, type: envelope.type, created: Date(timeIntervalSince1970: TimeInterval(envelope.created)),
            account: envelope.account, livemode: envelope.livemode ?? true, apiVersion: envelope.api_version,
            object: envelope.data.object, previousAttributes: envelope.data.previous_attributes ?? .null)
    }

    /// Whether PaymentIntents and Charges are rendered with their `invoice` (API versions before
    /// `2025-03-31.basil`), so that one without it is known not to pay an invoice.
    var paymentsNameTheirInvoice: Bool { apiVersion.map { $0.prefix(10) < "2025-03-31" } ?? false }

    /// Whose state the event may touch.
    var scope: StripeScope { StripeScope(account: account, livemode: livemode) }

    /// `metadata.<key>` of the object.
    func metadata(_ key: String) -> String? { object["metadata.\(key)"].string }
}
