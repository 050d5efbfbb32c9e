// SPDX-License-Identifier: Apache-2.0
import Foundation
import SwiftASN1

/// Reads the `nextUpdate` times of a DER OCSP answer (RFC 6960, 4.2.1): how long the responder
/// says its answer holds. swift-certificates checks the answer but does not expose these times.
///
/// Only the path to `nextUpdate` is read; the answer was already verified by `OCSPVerifierPolicy`.
enum OCSPAnswerValidity {
    /// The earliest `nextUpdate` of the answer's single responses; `nil` when none has one (the
    /// responder then says newer information is always available) or the answer cannot be read.
    static func nextUpdate(of answer: [UInt8]) -> Date? {
        try? earliestNextUpdate(answer)
    }

    private static func earliestNextUpdate(_ answer: [UInt8]) throws -> Date? {
        // OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED, responseBytes [0] EXPLICIT ResponseBytes }
        let basicDER: ASN1OctetString = try DER.sequence(try DER.parse(answer), identifier: .sequence) { nodes in
            _ = nodes.next()
            return try DER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { node in
                // ResponseBytes ::= SEQUENCE { responseType OBJECT IDENTIFIER, response OCTET STRING }
                try DER.sequence(node, identifier: .sequence) { nodes in
                    _ = nodes.next()
                    return try ASN1OctetString(derEncoded: &nodes)
                }
            }
        }
        // BasicOCSPResponse ::= SEQUENCE { tbsResponseData ResponseData, … }
        let responses: ASN1Node = try DER.sequence(try DER.parse(basicDER.bytes), identifier: .sequence) { nodes in
            guard let responseData = nodes.next() else { throw ASN1Error.invalidASN1Object(reason: "no ResponseData") }
            skipRest(&nodes)
            // ResponseData ::= SEQUENCE { version [0] EXPLICIT DEFAULT v1, responderID, producedAt, responses SEQUENCE OF … }
            return try DER.sequence(responseData, identifier: .sequence) { nodes in
                while let node = nodes.next() {
                    if node.identifier == .sequence {
                        skipRest(&nodes)
                        return node
                    }
                }
                throw ASN1Error.invalidASN1Object(reason: "no responses")
            }
        }
        guard case .constructed(let singleResponses) = responses.content else { return nil }
        var earliest: Date?
        for single in singleResponses {
            // SingleResponse ::= SEQUENCE { certID, certStatus, thisUpdate, nextUpdate [0] EXPLICIT GeneralizedTime OPTIONAL, … }
            let next: GeneralizedTime? = try DER.sequence(single, identifier: .sequence) { nodes in
                _ = nodes.next()
                _ = nodes.next()
                _ = nodes.next()
                let next = try DER.optionalExplicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { try GeneralizedTime(derEncoded: $0) }
                skipRest(&nodes)
                return next
            }
            if let next, let date = date(next) { earliest = min(earliest ?? date, date) }
        }
        return earliest
    }

    /// `DER.sequence` requires every element read; the ones after what is needed are skipped.
    private static func skipRest(_ nodes: inout ASN1NodeCollection.Iterator) {
        while nodes.next() != nil {}
    }

    private static func date(_ time: GeneralizedTime) -> Date? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: DateComponents(
            year: time.year, month: time.month, day: time.day, hour: time.hours, minute: time.minutes, second: time.seconds))
    }
}
