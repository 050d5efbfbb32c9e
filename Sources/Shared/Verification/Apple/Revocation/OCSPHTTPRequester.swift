// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import Synchronization
import X509

/// Asks an OCSP responder over HTTP, as RFC 6960 (appendix A) describes: a `POST` of the DER
/// request as `application/ocsp-request`.
///
/// Every failure is *terminal*: `OCSPVerifierPolicy` passes a chain whose responder gave a
/// non-terminal error, and an unchecked chain must never pass. Each answer received is kept in
/// ``answers``, so that the caller can read how long it holds.
struct OCSPHTTPRequester: OCSPRequester {
    /// An answer is a few hundred bytes to a few KiB; anything larger is not an OCSP answer.
    static let maximumAnswerBytes = 64 * 1024

    let timeout: TimeAmount
    let answers = Answers()

    func query(request: [UInt8], uri: String) async -> OCSPRequesterQueryResult {
        var http = HTTPClientRequest(url: uri)
        http.method = .POST
        http.headers.add(name: "Content-Type", value: "application/ocsp-request")
        http.headers.add(name: "Accept", value: "application/ocsp-response")
        http.body = .bytes(ByteBuffer(bytes: request))
        do {
            let response = try await HTTPClient.shared.execute(http, timeout: timeout)
            guard response.status == .ok else {
                return .terminalError(OCSPResponderUnavailable("the OCSP responder \(uri) answered HTTP \(response.status.code)"))
            }
            let body = Array(buffer: try await response.body.collect(upTo: Self.maximumAnswerBytes))
            answers.record(body)
            return .response(body)
        } catch {
            return .terminalError(OCSPResponderUnavailable("the OCSP responder \(uri) could not be reached (\(type(of: error)))"))
        }
    }

    /// The DER answers one check received; `OCSPVerifierPolicy` may ask from several tasks.
    final class Answers: Sendable {
        private let storage = Mutex<[[UInt8]]>([])

        func record(_ answer: [UInt8]) { storage.withLock { $0.append(answer) } }
        var all: [[UInt8]] { storage.withLock { $0 } }
    }
}

/// Why a responder gave no answer; it becomes the policy's failure reason.
struct OCSPResponderUnavailable: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
