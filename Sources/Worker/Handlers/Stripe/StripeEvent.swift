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
    var object: JSONValue

    private struct Envelope: Decodable {
        struct DataField: Decodable { var object: JSONValue }
        var id: String
        var type: String
        var created: Int64
        var account: String?
        var data: DataField
    }

    init(eventID: Int64, id: String, type: String, created: Date, account: String? = nil, object: JSONValue) {
        self.eventID = eventID
        self.id = id
        self.type = type
        self.created = created
        self.account = account
        self.object = object
    }

    /// - Throws: a decoding error when the stored body is not a Stripe event (ingest checked it was).
    init(eventID: Int64, body: Data) throws {
        let envelope = try JSONDecoder().decode(Envelope.self, from: body)
        self.init(
            eventID: eventID, id: envelope.id, type: envelope.type, created: Date(timeIntervalSince1970: TimeInterval(envelope.created)),
            account: envelope.account, object: envelope.data.object)
    }

    /// `metadata.<key>` of the object.
    func metadata(_ key: String) -> String? { object["metadata.\(key)"].string }
}
