// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird

/// `?limit=` (1 to 100, default 50) and `?starting_after=` (the id of the last row of the page
/// before): how the transaction history and the balance ledger page.
struct HistoryPage {
    var limit = 50
    var startingAfter: UUID?

    /// - Parameter cursorNames: what `starting_after` must be the id of, for the error.
    init(_ query: Parameters, cursorNames: String) throws {
        if let text = query["limit"] {
            guard let value = Int(text), (1...100).contains(value) else {
                throw APIError(.badRequest, code: "invalid_limit", message: "limit must be a whole number from 1 to 100")
            }
            limit = value
        }
        if let text = query["starting_after"] {
            guard let id = UUID(uuidString: String(text)) else {
                throw APIError(.badRequest, code: "invalid_cursor", message: "starting_after must be the id of \(cursorNames)")
            }
            startingAfter = id
        }
    }
}
