// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The ledger row an App Store transaction makes: what the worker's `AppleDecider` stores, and
/// what `POST /v1/iap/receipts/verify` shows in the read API's shape without storing it.
extension TransactionState {
    /// A new ledger row for an Apple transaction, as signed: `succeeded`, or `refunded` when it
    /// carries a `revocationDate`.
    public init(apple tx: AppleTransactionPayload, productType: ProductType, environment: PurchaseEnvironment) {
        self.init(source: .storeKit, providerTransactionID: tx.transactionId, environment: environment, status: .succeeded)
        productID = tx.productId
        self.productType = productType
        // Apple's `price` is in milliunits of `currency`, for the whole `quantity`; the ledger keeps
        // ISO 4217 minor units (yen for JPY, cents for USD, fils for KWD).
        let minorUnits = tx.currency.map(CurrencyMinorUnits.init)
        amount = tx.price.map { price in minorUnits?.minorUnits(fromMilliunits: price) ?? price / 10 }
        currency = minorUnits?.code
        purchasedAt = tx.purchaseDate
        quantity = tx.quantity.flatMap { $0 > 1 ? $0 : nil }
        isTrial = tx.isFreeTrial
        // The period a subscription's transaction paid for ends at its `expiresDate`.
        if productType == .autoRenewable { periodEnd = tx.expiresDate }
        takeRevocation(of: tx)
    }

    /// Takes the transaction's refund as signed: `refunded` with `amountRefunded` while it carries
    /// a `revocationDate`, else `succeeded` with none.
    public mutating func takeRevocation(of tx: AppleTransactionPayload) {
        status = tx.revocationDate == nil ? .succeeded : .refunded
        refundedAt = tx.revocationDate
        amountRefunded = tx.revocationDate == nil ? nil : Self.appleRefundedAmount(of: tx, amount: amount)
    }

    /// What a refund returned, in the ledger's minor units: Apple's `revocationPercentage`
    /// (milliunits of a percent: `33333` is 33.333 %) of the amount for a prorated refund
    /// (`REFUND_PRORATED`; one of three consumables, or a subscription's unused time), rounded to
    /// the nearest unit; the whole amount otherwise.
    public static func appleRefundedAmount(of tx: AppleTransactionPayload, amount: Int64?) -> Int64? {
        guard let amount else { return nil }
        guard tx.revocationType == "REFUND_PRORATED", let percentage = tx.revocationPercentage, (0..<100_000).contains(percentage) else {
            return amount
        }
        return (amount * percentage + 50_000) / 100_000
    }
}
