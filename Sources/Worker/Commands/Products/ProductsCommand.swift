// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `worker products …`: the catalog (docs/catalog.md), changed at run time.
struct ProductsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "products",
        abstract: "Manage the product catalog: what the app sells on either store and the access levels each grants.",
        discussion: """
            A product has the id the app and the read API use (a web purchase names it in Stripe's \
            metadata.product_id), a type, optionally its Stripe price and the App Store product ids \
            that are the same product, and the access levels it grants (pro, ad_free, …), which \
            GET /v1/iap/access answers from any entitlement on either store. Archived products are \
            no longer sold; what was bought keeps its access levels.

            \(OperatorSession.help)
            """,
        subcommands: [
            ProductsAddCommand.self, ProductsListCommand.self, ProductsShowCommand.self, ProductsUpdateCommand.self,
            ProductsArchiveCommand.self,
        ])
}

/// The fields `add` and `update` share; on `update`, an option not given leaves the field as it is.
struct ProductOptions: ParsableArguments {
    @Option(help: "consumable, non_consumable, auto_renewable or non_renewing.")
    var type: String?

    @Option(name: .customLong("stripe-price"), help: "The Stripe price: its id (price_…) or lookup key; empty to clear.")
    var stripePrice: String?

    @Option(name: .customLong("apple-product-ids"), help: "Comma-separated App Store product ids that are this product (empty to clear).")
    var appleProductIDs: String?

    @Option(name: .customLong("play-product-ids"), help: "Comma-separated Google Play product ids that are this product (empty to clear).")
    var playProductIDs: String?

    @Option(name: .customLong("trial-days"), help: "A web subscription's free trial in days (1–730; 0 to clear).")
    var trialDays: Int?

    @Option(name: .customLong("access-levels"), help: "Comma-separated access levels it grants: a-z, 0-9, _, -, . (empty to clear).")
    var accessLevels: String?

    @Option(
        name: .customLong("currency-grants"),
        help: "What a purchase, or a subscription's every paid period, grants: credits=500,gems=2 (empty to clear; docs/credits.md).")
    var currencyGrants: String?

    @Option(
        name: .customLong("trial-currency-grants"),
        help: "What a subscription's free trial grants instead: credits=100 (empty: the same as a paid period).")
    var trialCurrencyGrants: String?

    @Option(
        name: .customLong("currency-grants-expire"),
        help: "true: what a subscription's period grants expires at the end of that period; false (the default): it never expires.")
    var currencyGrantsExpire: Bool?

    func validate() throws {
        _ = try changes()
    }

    /// The changes these options name; usage errors (exit 2) for values that are not one.
    func changes() throws -> CatalogStore.Changes {
        var changes = CatalogStore.Changes()
        if let type {
            guard let value = ProductType(rawValue: type) else {
                throw ValidationError("--type must be one of \(ProductType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            changes.type = value
        }
        if let stripePrice { changes.stripePrice = .some(stripePrice.isEmpty ? nil : stripePrice) }
        if let appleProductIDs { changes.appleProductIDs = EndpointOptions.list(appleProductIDs) }
        if let playProductIDs { changes.playProductIDs = EndpointOptions.list(playProductIDs) }
        if let trialDays {
            guard (0...730).contains(trialDays) else { throw ValidationError("--trial-days must be from 0 to 730") }
            changes.trialDays = .some(trialDays == 0 ? nil : trialDays)
        }
        if let accessLevels {
            let levels = EndpointOptions.list(accessLevels)
            if let wrong = levels.first(where: { !CatalogProduct.isValidAccessLevel($0) }) {
                throw ValidationError("--access-levels: \(wrong) is not an access level (1 to 64 of a-z, 0-9, _, -, .)")
            }
            changes.accessLevels = Array(Set(levels)).sorted()
        }
        if let currencyGrants { changes.currencyGrants = try Self.amounts(currencyGrants, option: "--currency-grants") }
        if let trialCurrencyGrants {
            let amounts = try Self.amounts(trialCurrencyGrants, option: "--trial-currency-grants")
            changes.trialCurrencyGrants = .some(amounts.isEmpty ? nil : amounts)
        }
        changes.currencyGrantsExpire = currencyGrantsExpire
        return changes
    }

    /// `credits=500,gems=2`: positive whole amounts of currencies (``BalanceAdjustments``'s rule).
    static func amounts(_ text: String, option: String) throws -> [String: Int64] {
        var amounts: [String: Int64] = [:]
        for pair in EndpointOptions.list(text) {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let amount = Int64(parts[1]), amount > 0 else {
                throw ValidationError("\(option): \(pair) is not currency=amount with a positive whole amount")
            }
            guard amounts.updateValue(amount, forKey: parts[0]) == nil else { throw ValidationError("\(option): \(parts[0]) is named twice") }
        }
        guard !amounts.isEmpty else { return [:] }
        do {
            return try BalanceAdjustments(amounts).amounts
        } catch let problem as BalanceAdjustments.Problem {
            throw ValidationError("\(option): \(problem)")
        }
    }
}

/// The product an operator names.
struct ProductArgument: ParsableArguments {
    @Argument(help: "The product's id.")
    var id: String

    func validate() throws {
        if let problem = UserIDRule.problem(with: id) {
            throw ValidationError(problem.replacingOccurrences(of: "user_id", with: "a product id"))
        }
    }
}

/// A product as operators see it: text, or JSON with `--json`.
struct ProductOutput: Encodable {
    let product: CatalogProduct

    func encode(to encoder: any Encoder) throws {
        try product.encode(to: encoder)
    }

    var text: String {
        let apple = product.appleProductIDs.isEmpty ? "—" : product.appleProductIDs.joined(separator: ", ")
        let play = product.playProductIDs.isEmpty ? "—" : product.playProductIDs.joined(separator: ", ")
        let levels = product.accessLevels.isEmpty ? "—" : product.accessLevels.joined(separator: ", ")
        let trial = product.trialDays.map { "\($0) days" } ?? "—"
        let sold = product.archivedAt.map { "no: archived \($0.formatted(.iso8601))" } ?? "yes"
        let lines: [(String, String)] = [
            ("id", product.id), ("type", product.type.rawValue), ("stripe price", product.stripePrice ?? "—"), ("App Store ids", apple),
            ("Google Play ids", play),
            ("trial", trial), ("access levels", levels), ("grants", Self.amounts(product.currencyGrants)),
            ("trial grants", product.trialCurrencyGrants.map(Self.amounts) ?? "as a paid period"),
            ("grants expire", product.currencyGrantsExpire ? "at the end of their period" : "never"), ("sold", sold),
        ]
        return lines.map { name, value in name.padding(toLength: 14, withPad: " ", startingAt: 0) + " " + value }.joined(separator: "\n")
    }

    static func amounts(_ amounts: [String: Int64]) -> String {
        amounts.isEmpty ? "—" : amounts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
    }
}

/// Runs `change` on the catalog and prints the product it returns; exit 1 when there is none
/// (`no product ID`) or the change was refused (the refusal).
func changeProduct(
    _ id: String, json: Bool, _ change: @Sendable @escaping (CatalogStore) async throws -> CatalogProduct?
) async throws {
    let product = try await OperatorSession.with { client, logger in
        do {
            return try await change(CatalogStore(client: client, logger: logger))
        } catch let refusal as CatalogStore.Refusal {
            throw CommandFailure(refusal.description)
        }
    }
    guard let product else { throw CommandFailure("no product \(id)") }
    OperatorSession.show(json ? try OperatorSession.json(ProductOutput(product: product)) : ProductOutput(product: product).text)
}

/// `worker products add ID --type …`.
struct ProductsAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a product.", discussion: OperatorSession.help)

    @OptionGroup var product: ProductArgument
    @OptionGroup var options: ProductOptions
    @OptionGroup var output: JSONFlag

    func validate() throws {
        guard options.type != nil else { throw ValidationError("--type is required") }
    }

    func run() async throws {
        let changes = try options.changes()
        let new = CatalogProduct(
            id: product.id, type: changes.type ?? .nonConsumable, stripePrice: changes.stripePrice ?? nil,
            appleProductIDs: changes.appleProductIDs ?? [], playProductIDs: changes.playProductIDs ?? [], trialDays: changes.trialDays ?? nil, accessLevels: changes.accessLevels ?? [],
            currencyGrants: changes.currencyGrants ?? [:], trialCurrencyGrants: changes.trialCurrencyGrants ?? nil,
            currencyGrantsExpire: changes.currencyGrantsExpire ?? false)
        try await changeProduct(new.id, json: output.json) { try await $0.add(new) }
    }
}

/// `worker products list`.
struct ProductsListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the products.", discussion: OperatorSession.help)

    @Flag(help: "Archived products too.")
    var all = false
    @OptionGroup var output: JSONFlag

    func run() async throws {
        let soldOnly = !all
        let products = try await OperatorSession.with { client, logger in try await CatalogStore(client: client, logger: logger).all(soldOnly: soldOnly) }
        if output.json { return OperatorSession.show(try OperatorSession.json(products.map(ProductOutput.init))) }
        guard !products.isEmpty else { return OperatorSession.show("no products (add one with: worker products add ID --type auto_renewable --access-levels pro)") }
        var table = TextTable("ID", "TYPE", "ACCESS LEVELS", "STRIPE PRICE", "APP STORE IDS", "PLAY IDS", "SOLD")
        for product in products {
            table.add(
                product.id, product.type.rawValue, product.accessLevels.joined(separator: ","), product.stripePrice ?? "",
                product.appleProductIDs.joined(separator: ","), product.playProductIDs.joined(separator: ","), product.archivedAt == nil ? "yes" : "no")
        }
        OperatorSession.show(table.rendered)
    }
}

/// `worker products show ID`.
struct ProductsShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one product.", discussion: OperatorSession.help)

    @OptionGroup var product: ProductArgument
    @OptionGroup var output: JSONFlag

    func run() async throws {
        let id = product.id
        try await changeProduct(id, json: output.json) { try await $0.product(id) }
    }
}

/// `worker products update ID …`.
struct ProductsUpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update", abstract: "Change a product's type, Stripe price, App Store ids, trial, access levels or currency grants.",
        discussion: OperatorSession.help)

    @OptionGroup var product: ProductArgument
    @OptionGroup var options: ProductOptions
    @OptionGroup var output: JSONFlag

    func run() async throws {
        let (id, changes) = (product.id, try options.changes())
        try await changeProduct(id, json: output.json) { try await $0.update(id, changes) }
    }
}

/// `worker products archive ID`.
struct ProductsArchiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "archive", abstract: "Stop selling a product; what was bought keeps its access levels.", discussion: OperatorSession.help)

    @OptionGroup var product: ProductArgument
    @OptionGroup var output: JSONFlag

    func run() async throws {
        let id = product.id
        try await changeProduct(id, json: output.json) { try await $0.archive(id) }
    }
}
