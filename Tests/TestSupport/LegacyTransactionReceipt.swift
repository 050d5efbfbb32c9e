// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A legacy (iOS 6) transaction receipt as the app sent it: base64 of an old-style property list
/// whose `purchase-info` is base64 of another, with the fields of Apple's examples. Apple's own
/// test file (Vectors/apple/receipts/legacyTransaction.b64) names a transaction only.
public enum LegacyTransactionReceipt {
    public static func make(transactionID: String, bid: String) -> String {
        let info = propertyList([
            ("original-purchase-date-pst", "2012-04-30 08:05:55 America/Los_Angeles"), ("original-transaction-id", transactionID),
            ("bvrs", "1.0"), ("transaction-id", transactionID), ("quantity", "1"), ("product-id", "com.example.credits.500"),
            ("bid", bid), ("purchase-date", "2012-04-30 15:05:55 Etc/GMT"),
        ])
        let receipt = propertyList([
            ("signature", "AAAA"), ("purchase-info", Data(info.utf8).base64EncodedString()), ("environment", "Sandbox"),
            ("pod", "100"), ("signing-status", "0"),
        ])
        return Data(receipt.utf8).base64EncodedString()
    }

    /// `{ "key" = "value"; … }`, one pair a line, as iOS 6 wrote them.
    static func propertyList(_ pairs: [(String, String)]) -> String {
        "{\n" + pairs.map { "\t\"\($0.0)\" = \"\($0.1)\";\n" }.joined() + "}\n"
    }
}
