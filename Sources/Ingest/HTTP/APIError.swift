// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import HTTPTypes
import Shared

/// An error answered as `{"error":{"code":"…","message":"…"}}` with its status.
struct APIError: HTTPResponseError, CustomStringConvertible {
    var status: HTTPResponse.Status
    var code: String
    var message: String
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, code: String, message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    /// The answer to a request that verification refused.
    init(_ rejection: Rejection, headers: HTTPFields = [:]) {
        self.init(.init(code: rejection.reason.status), code: rejection.reason.code, message: rejection.message, headers: headers)
    }

    var description: String { "\(status.code) \(code): \(message)" }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    var body: [UInt8] {
        let object = ["error": ["code": code, "message": message]]
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }

    static func notFound(_ path: String) -> APIError {
        APIError(.notFound, code: "not_found", message: "no route for \(path.prefix(200))")
    }

    static func unavailable(_ message: String) -> APIError {
        APIError(.serviceUnavailable, code: "unavailable", message: message, headers: [.retryAfter: "5"])
    }
}
