// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// A payload Apple signs as a JWS; `signedDate` is the time its chain is validated at.
public protocol AppleSignedPayload: Decodable, Sendable {
    var signedDate: Date? { get }
    /// A name for error messages.
    static var displayName: String { get }
}

/// Apple encodes dates as milliseconds since 1970.
enum AppleJSON {
    static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }

    static var decoder: JSONDecoder { makeDecoder() }
}
