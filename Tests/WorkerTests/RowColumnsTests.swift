// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import Shared
import Testing
import TestSupport

/// A row's columns are listed once in Swift (``EntitlementColumns/names``,
/// ``TransactionColumns/names``); the held save's JSON (``HeldStateWrite``) and
/// `sluice_save_held_states` (sql/functions/) must name the same columns in the same order, a
/// time as its microseconds (`…_us`). A column added to one and not the others fails here.
struct RowColumnsTests {
    static func functionText() throws -> String {
        try String(
            contentsOf: TestDatabase.migrationsDirectory.appendingPathComponent("functions/sluice_save_held_states.sql"), encoding: .utf8)
    }

    /// The comma-separated names after `marker` up to its closing parenthesis or the statement's
    /// end; of `name type` pairs and `name = value` settings, the names; a time's `_us` dropped.
    static func names(after marker: String, in sql: String) throws -> [String] {
        let start = try #require(sql.range(of: marker), "\(marker) not found").upperBound
        var depth = 0
        var text = ""
        for character in sql[start...] {
            if character == ";" && depth == 0 { break }
            if character == "(" { depth += 1 }
            if character == ")" {
                if depth == 0 { break }
                depth -= 1
            }
            text.append(character)
        }
        return text.split(separator: ",").map { part in
            let name = String(part.split(whereSeparator: \.isWhitespace).first ?? "")
            return name.hasSuffix("_us") ? String(name.dropLast(3)) : name
        }
    }

    /// The member names of the one row `argument` holds in `table`, a time's `_us` dropped.
    static func members(_ argument: String, table: String) throws -> Set<String> {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(argument.utf8)) as? [String: Any])
        let row = try #require((object[table] as? [[String: Any]])?.first)
        return Set(row.keys.map { $0.hasSuffix("_us") ? String($0.dropLast(3)) : $0 })
    }

    @Test func anEntitlementsColumnsAreNamedAlikeEverywhere() throws {
        let sql = try Self.functionText()
        let names = EntitlementColumns.names
        #expect(try Self.names(after: "INSERT INTO entitlements (", in: sql) == ["id"] + names + ["announced_active"])
        #expect(try Self.names(after: "jsonb_to_recordset(p_states->'entitlements') AS x(", in: sql) == ["n", "id"] + names + ["announced_active"])
        let updated = try Self.names(after: "ON CONFLICT (entity_key) DO UPDATE SET", in: sql)
        // The key, and the source and environment it names, never change.
        #expect(updated == names.filter { !["entity_key", "source", "environment"].contains($0) } + ["announced_active", "updated_at"])
        let state = EntitlementState(entityKey: "k", userID: "u", productID: "p", productType: .autoRenewable, source: .storeKit, status: .active)
        let argument = HeldStateWrite.argument([.entitlement(state, id: UUID(), announcedActive: true)])
        #expect(try Self.members(argument, table: "entitlements") == Set(["n", "id"] + names + ["announced_active"]))
    }

    @Test func aTransactionsColumnsAreNamedAlikeEverywhere() throws {
        let sql = try Self.functionText()
        let names = TransactionColumns.names
        #expect(try Self.names(after: "INSERT INTO transactions (", in: sql) == ["id"] + names)
        #expect(try Self.names(after: "jsonb_to_recordset(p_states->'transactions') AS x(\n", in: sql) == ["n", "id"] + names)
        let updated = try Self.names(after: "ON CONFLICT (source, environment, provider_transaction_id) DO UPDATE SET", in: sql)
        #expect(updated == Array(names.dropFirst(3)) + ["updated_at"], "every column but the key is updated")
        let state = TransactionState(source: .webCheckout, providerTransactionID: "pi", status: .succeeded)
        let argument = HeldStateWrite.argument([.transaction(state, id: UUID(), eventID: 1)])
        #expect(try Self.members(argument, table: "transactions") == Set(["n", "id"] + names + ["event_id"]))
    }
}
