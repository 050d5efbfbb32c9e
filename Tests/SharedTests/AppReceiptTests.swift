// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing
import TestSupport

/// StoreKit 1 receipts read as Apple's `ReceiptUtility` reads them, on Apple's own test files
/// (Tests/Vectors/apple/receipts), and malformed ones refused with a reason.
struct AppReceiptTests {
    @Test func anXcodeReceiptWithoutPurchasesNamesNoTransaction() throws {
        let receipt = try AppReceipt(base64: try Vectors.text("apple/receipts/xcode-app-receipt-empty.b64"))
        #expect(receipt.transactionID == nil && receipt.purchases.isEmpty)
        #expect(receipt.bundleID == "com.example.naturelab.backyardbirds.example")
    }

    @Test func anXcodeReceiptWithAPurchaseNamesItsTransaction() throws {
        let receipt = try AppReceipt(base64: try Vectors.text("apple/receipts/xcode-app-receipt-with-transaction.b64"))
        #expect(receipt.transactionID == "0", "as Apple's ReceiptUtility: \(receipt)")
        #expect(receipt.purchases.count == 1)
        #expect(receipt.bundleID == "com.example.naturelab.backyardbirds.example")
    }

    @Test func aLegacyTransactionReceiptNamesItsTransaction() throws {
        let apples = AppReceipt.legacyPurchase(transactionReceipt: try Vectors.text("apple/receipts/legacyTransaction.b64"))
        #expect(apples?.transactionID == "33993399" && apples?.bundleID == nil, "Apple's file names no bid")
        #expect(AppReceipt.legacyPurchase(transactionReceipt: Data(#"{ "purchase-info" = "!!"; }"#.utf8).base64EncodedString()) == nil)
        #expect(AppReceipt.legacyPurchase(transactionReceipt: "not base64 at all") == nil)
        let named = AppReceipt.legacyPurchase(transactionReceipt: LegacyTransactionReceipt.make(transactionID: "1000000012345678", bid: "com.example.other-app"))
        #expect(named?.transactionID == "1000000012345678" && named?.bundleID == "com.example.other-app")
        let odd = AppReceipt.legacyPurchase(transactionReceipt: LegacyTransactionReceipt.make(transactionID: "7", bid: "com.example/../x"))
        #expect(odd?.transactionID == "7" && odd?.bundleID == nil, "a bid of other characters is not read")
    }

    @Test(arguments: [
        ("", "the receipt is not base64"), ("AAAA", "the receipt is not BER-encoded ASN.1"),
        // SEQUENCE { OID 1.2.840.113549.1.7.1 (data), … }: PKCS#7, but not SignedData.
        ("MBMGCSqGSIb3DQEHAaAGBARhYmNk", "the receipt is not PKCS#7 SignedData"),
        // SEQUENCE { INTEGER 1 }
        ("MAMCAQE=", "the receipt is not PKCS#7 SignedData"),
    ])
    func aMalformedReceiptIsRefusedWithAReason(base64: String, reason: String) {
        #expect(throws: AppReceipt.Problem.self) { try AppReceipt(base64: base64) }
        do { _ = try AppReceipt(base64: base64) } catch { #expect("\(error)" == reason, "\(base64)") }
    }

    /// Truncations and flipped bytes of a real receipt: an error or a receipt, never a crash (the
    /// fuzz target FuzzAppReceipt runs this at scale).
    @Test func damagedReceiptsNeverCrash() throws {
        let bytes = Array(Data(base64Encoded: try Vectors.text("apple/receipts/xcode-app-receipt-with-transaction.b64"), options: .ignoreUnknownCharacters)!)
        for length in stride(from: 0, to: bytes.count, by: 7) { _ = try? AppReceipt(der: Array(bytes.prefix(length))) }
        for index in stride(from: 0, to: bytes.count, by: 5) {
            var damaged = bytes
            damaged[index] ^= 0xFF
            _ = try? AppReceipt(der: damaged)
        }
    }
}
