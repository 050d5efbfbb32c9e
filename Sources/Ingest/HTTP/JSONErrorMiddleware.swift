// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import HTTPTypes
import NIOCore
import Shared
import Foundation
import Logging

/// Turns every error into a JSON error response (`{"error":{"code","message"}}`), so no request is
/// answered with Hummingbird's empty `500`, and echoes the request id in `X-Request-Id`.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            response = try Self.apiError(for: error, request: request, context: context).response(from: request, context: context)
        }
        response.headers[.requestID] = context.id
        return response
    }

    static func apiError(for error: any Error, request: Request, context: Context) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let rejection as Rejection:
            return APIError(rejection)
        case is NIOTooManyBytesError:
            return APIError(Rejection(.tooLarge, "the body is larger than MAX_BODY_BYTES"))
        case let error as HTTPError where error.status == .notFound:
            return .notFound(request.uri.path)
        case let error as HTTPError:
            return APIError(error.status, code: error.status.reasonPhrase.lowercased().replacingOccurrences(of: " ", with: "_"),
                            message: error.body ?? error.status.reasonPhrase)
        case let error where DatabaseProblem.isUnavailability(error):
            context.logger.warning("request answered 503: the database cannot be reached", metadata: [
                "error_type": "\(DatabaseProblem.typeName(of: error))"])
            return APIError(.serviceUnavailable, code: "database_unavailable", message: "the database cannot be reached", headers: [.retryAfter: "5"])
        default:
            context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
            return APIError(.internalServerError, code: "internal", message: "the request could not be handled")
        }
    }
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
    static let stripeSignature = HTTPField.Name("Stripe-Signature")!
    static let sluiceKey = HTTPField.Name("X-Sluice-Key")!
}
