// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Shared

/// The `{user_id}` of `/v1/iap/users/{user_id}/…`.
enum UserPathSegment {
    /// The segment decoded (as sent it is percent-encoded: `%1B` is an ESC), held to ``UserIDRule``.
    static func user(_ parameters: Parameters) throws -> String {
        guard let segment = parameters.get("user_id"), let user = segment.removingPercentEncoding else {
            throw APIError(.badRequest, code: "malformed", message: "user_id must be a percent-encoded path segment")
        }
        if let problem = UserIDRule.problem(with: user) { throw APIError(.badRequest, code: "malformed", message: problem) }
        return user
    }
}
