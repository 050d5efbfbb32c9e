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

    /// - Throws: ``JSONSyntaxError``, or ``NotAnEvent`` when the stored body is not a Stripe
    ///   event (ingest checked it was).
    init(eventID: Int64, body: Data) throws {
        guard case .object(let envelope) = try JSONValue.parse(body) else { throw NotAnEvent(reason: "it is not an object") }
        guard case .object(let data) = envelope["data"] ?? .null, let object = data["object"] else {
            throw NotAnEvent(reason: "it has no data.object")
        }
        guard case .number(let seconds) = envelope["created"] ?? .null, let created = Int64(exactly: seconds) else {
            throw NotAnEvent(reason: "created is not a whole number of seconds")
        }
        guard let id = try Self.member("id", of: envelope, \.anyString), let type = try Self.member("type", of: envelope, \.anyString) else {
            throw NotAnEvent(reason: "it has no id or type")
        }
        self.init(
            eventID: eventID, id: id, type: type, created: Date(timeIntervalSince1970: TimeInterval(created)),
            account: try Self.member("account", of: envelope, \.anyString), livemode: try Self.member("livemode", of: envelope, \.bool) ?? true,
            apiVersion: try Self.member("api_version", of: envelope, \.anyString), object: object,
            previousAttributes: data["previous_attributes"] ?? .null)
    }

    /// Why a stored body could not be read as a Stripe event.
    struct NotAnEvent: Error, CustomStringConvertible {
        var reason: String
        var description: String { "the stored body is not a Stripe event: \(reason)" }
    }

    /// An envelope member read with `read`: `nil` when absent or `null`; an error when of another type.
    private static func member<Value>(_ name: String, of envelope: [String: JSONValue], _ read: (JSONValue) -> Value?) throws -> Value? {
        guard let value = envelope[name], value != .null else { return nil }
        guard let typed = read(value) else { throw NotAnEvent(reason: "\(name) has the wrong type") }
        return typed
    }

    /// Whether PaymentIntents and Charges are rendered with their `invoice` (API versions before
    /// `2025-03-31.basil`), so that one without it is known not to pay an invoice.
    var paymentsNameTheirInvoice: Bool { apiVersion.map { $0.prefix(10) < "2025-03-31" } ?? false }

    /// Whose state the event may touch.
    var scope: StripeScope { StripeScope(account: account, livemode: livemode) }

    /// `metadata.<key>` of the object.
    func metadata(_ key: String) -> String? { object["metadata.\(key)"].string }
}
