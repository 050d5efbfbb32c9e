// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// Every value reaches PostgreSQL as a bind parameter: PostgresNIO turns each `\(value)` in a
/// query literal into `$n`. The only text spliced into SQL is `\(unescaped: …)` and
/// `PostgresQuery(unsafeSQL:)`; this audit reads every source file and fails on any such use
/// that is not listed here with the reason it cannot carry input.
struct SQLBindParameterAuditTests {
    /// Expressions allowed in `\(unescaped: …)`, each a name fixed in code.
    static let allowedUnescaped: [String: String] = [
        "table": "JobQueue's table, QueueName.rawValue: one of two static QueueName values",
        "queue.rawValue": "QueueName.rawValue: one of two static QueueName values",
        "name.kindColumn": "a column name fixed in QueueName's static values",
        "attributesExpression": "built from QueueName's static column names",
        "summaryExpression": "a constant jsonb_build_object over column names",
        "EntitlementColumns.list": "a constant column list",
        "Self.columns": "EndpointStore's constant column list",
        "name.runnableCondition": "a constant condition fixed in QueueName's static values",
        "TransactionColumns.list": "a constant column list",
        "CheckoutRow.columns": "CheckoutRow's constant column list",
        "keepKeys": "QueuePruner's constant CTE that keeps a pruned event's key, or nothing",
    ]

    /// Files allowed to use `PostgresQuery(unsafeSQL:)`, each with why.
    static let allowedUnsafeSQL: [String: String] = [
        "Shared/Storage/Migrator.swift": "runs the statements of the migration files shipped in sql/",
        "Shared/Storage/EventStore.swift": "a multi-row INSERT whose text is only $n placeholders; values are binds",
    ]

    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    static func swiftFiles() throws -> [(path: String, text: String)] {
        let enumerator = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        var files: [(String, String)] = []
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let relative = String(url.path.dropFirst(sources.path.count + 1))
            files.append((relative, try String(contentsOf: url, encoding: .utf8)))
        }
        return files
    }

    @Test func onlyNamesFixedInCodeAreSplicedIntoSQL() throws {
        let files = try Self.swiftFiles()
        #expect(files.count > 50, "the audit found too few sources to mean anything")
        var spliced = 0
        for (path, text) in files {
            for match in text.matches(of: /\\\(unescaped:\s*([^)]+)\)/) {
                spliced += 1
                let expression = String(match.1).trimmingCharacters(in: .whitespaces)
                #expect(Self.allowedUnescaped[expression] != nil, "\(path) splices \(expression) into SQL unescaped")
            }
            if text.contains("unsafeSQL:") {
                #expect(Self.allowedUnsafeSQL[path] != nil, "\(path) builds SQL text with PostgresQuery(unsafeSQL:)")
            }
            // SQL text glued together from strings bypasses the query literal's binds.
            #expect(text.firstMatch(of: /\.query\(\s*"[^"]*"\s*\+/) == nil, "\(path) concatenates SQL text")
        }
        #expect(spliced > 0, "the pattern no longer matches how queries are written")
    }
}
