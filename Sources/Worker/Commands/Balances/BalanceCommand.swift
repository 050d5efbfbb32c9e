// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `worker balance …`: in-app currency balances (docs/credits.md), for support.
struct BalanceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "balance",
        abstract: "Show a user's in-app currency balances, or adjust them for support.",
        discussion: """
            Balances change only through the ledger (sluice_adjust_balances): each change is a row \
            with its cause, reason and who made it, atomic across currencies, never below zero.

            \(OperatorSession.help)
            """,
        subcommands: [BalanceShowCommand.self, BalanceAdjustCommand.self])
}

/// `worker balance show USER`: the balances and the newest ledger rows.
struct BalanceShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "A user's balances and their newest ledger rows.")

    @Argument(help: "The user id.") var user: String
    @Option(help: "How many ledger rows (1–100).") var limit = 20
    @Flag(help: "One JSON object: {user_id, balances, balance_transactions}.") var json = false

    func validate() throws {
        if let problem = UserIDRule.problem(with: user) { throw ValidationError(problem) }
        guard (1...100).contains(limit) else { throw ValidationError("--limit must be from 1 to 100") }
    }

    func run() async throws {
        let (user, limit, json) = (self.user, self.limit, self.json)
        try await OperatorSession.with { client, logger in
            let store = BalanceStore(client: client, logger: logger)
            let balances = try await store.balances(user: user)
            let rows = try await store.history(user: user, limit: limit)
            if json {
                struct Answer: Encodable {
                    var user_id: String
                    var balances: [String: Int64]
                    var balance_transactions: [BalanceTransaction]
                }
                OperatorSession.show(try OperatorSession.json(Answer(user_id: user, balances: balances, balance_transactions: rows)))
                return
            }
            OperatorSession.show(BalanceText.balances(balances, user: user))
            for row in rows { OperatorSession.show("  " + BalanceText.row(row)) }
        }
    }
}

/// `worker balance adjust USER --credits +100 --reason TEXT`.
struct BalanceAdjustCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adjust",
        abstract: "Add to or take from a user's balances, recorded with the reason and who did it.",
        discussion: """
            Name each currency as an option with a signed amount: --credits +100 --gems -2 (or \
            --credits=-5). Every currency moves, or none does: taking more than a balance holds is \
            refused (exit 1) and nothing changes. --key makes the adjustment idempotent: run again \
            with the same key and amounts, it is not made twice.
            """)

    @Argument(help: "The user id.") var user: String
    @Option(help: "Why (shown in the ledger, the API and the console).") var reason: String
    @Option(help: "Who makes it (default: $SUDO_USER, else $USER).") var by: String?
    @Option(help: "An idempotency key: the same adjustment with it again is not made twice (not starting with grant:, take_back:, give_back: or expiry:, Sluice's own).") var key: String?
    @Flag(help: "Print the ledger row as JSON.") var json = false
    @Argument(parsing: .allUnrecognized, help: .hidden) var amountArguments: [String] = []

    func validate() throws {
        if let problem = UserIDRule.problem(with: user) { throw ValidationError(problem) }
        guard !reason.isEmpty, reason.count <= 500, !UserIDRule.containsControlCharacters(reason) else {
            throw ValidationError("--reason must be 1 to 500 characters without control characters")
        }
        _ = try Self.adjustments(amountArguments)
    }

    /// `--credits +100 --gems=-2` as adjustments.
    static func adjustments(_ arguments: [String]) throws -> BalanceAdjustments {
        var amounts: [String: Int64] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            guard argument.hasPrefix("--") else { throw ValidationError("unexpected \(argument): name a currency, as --credits +100") }
            var name = String(argument.dropFirst(2))
            var value: String
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            } else {
                guard index + 1 < arguments.count else { throw ValidationError("--\(name) needs an amount, as --\(name) +100") }
                index += 1
                value = arguments[index]
            }
            if value.hasPrefix("+") { value.removeFirst() }
            guard let amount = Int64(value) else { throw ValidationError("--\(name): \(value) is not a whole number") }
            guard amounts.updateValue(amount, forKey: name) == nil else { throw ValidationError("--\(name) is given twice") }
            index += 1
        }
        do {
            return try BalanceAdjustments(amounts)
        } catch let problem as BalanceAdjustments.Problem {
            throw ValidationError(problem.description)
        }
    }

    func run() async throws {
        let adjustments = try Self.adjustments(amountArguments)
        let environment = ProcessInfo.processInfo.environment
        let actor = by ?? environment["SUDO_USER"] ?? environment["USER"] ?? "operator"
        let (user, reason, key, json) = (self.user, self.reason, self.key, self.json)
        if let key, CurrencyGrantDecision.isReserved(key) {
            throw CommandFailure(
                "--key may not start with \(CurrencyGrantDecision.reservedKeyPrefixes.joined(separator: ", ")): Sluice keys its own grants so")
        }
        let digest = try BalanceRequest(adjustments: adjustments, reason: reason).digest
        let outcome = try await OperatorSession.with { client, logger in
            try await BalanceStore(client: client, logger: logger).adjust(
                user: user, adjustments, cause: .operator, key: key, digest: key == nil ? nil : digest, reason: reason, actor: actor)
        }
        switch outcome {
        case .applied(let row), .replayed(let row):
            if case .replayed = outcome, !json { OperatorSession.show("already made with this key:") }
            OperatorSession.show(json ? try OperatorSession.json(row) : BalanceText.row(row))
        case .insufficient(let balances):
            let short = balances.sorted { $0.key < $1.key }.map { "\($0.key) (balance \($0.value))" }.joined(separator: ", ")
            throw CommandFailure("not enough \(short): nothing was changed")
        case .keyReused:
            throw CommandFailure("--key \(key ?? "") was used for another adjustment of \(user): nothing was changed")
        }
    }
}

/// How the CLI writes balances and ledger rows.
enum BalanceText {
    static func balances(_ balances: [String: Int64], user: String) -> String {
        balances.isEmpty
            ? "\(user): no balances"
            : "\(user): " + balances.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }

    static func row(_ row: BalanceTransaction) -> String {
        let moved = row.applied.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value > 0 ? "+" : "")\($0.value) → \(row.balances[$0.key] ?? 0)" }
        var text = "\(row.createdAt.formatted(.iso8601)) \(row.cause.rawValue): " + moved.joined(separator: ", ")
        if let shortfall = row.shortfall, !shortfall.isEmpty {
            text += " (could not take " + shortfall.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ") + ")"
        }
        if let expiresAt = row.expiresAt { text += " (expires \(expiresAt.formatted(.iso8601)))" }
        if let reason = row.reason { text += " — \(reason)" }
        if let actor = row.actor { text += " [by \(actor)]" }
        return text + " (\(row.id.uuidString.lowercased()))"
    }
}
