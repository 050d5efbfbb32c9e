// SPDX-License-Identifier: Apache-2.0
// Fuzzes the StoreKit 1 receipt readers `POST /v1/iap/receipts` runs on untrusted input: the app
// receipt's PKCS#7 / BER (indefinite lengths, constructed OCTET STRINGs, nested attribute SETs)
// from its bytes and from base64, and the legacy transaction receipt's property-list text.
// Input: the receipt's bytes.
import Foundation
import FuzzSupport
import Shared

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeRawBufferPointer(fuzzInput: data, size))
    _ = try? AppReceipt(der: bytes)
    let text = String(decoding: bytes, as: UTF8.self)
    _ = try? AppReceipt(base64: text)
    _ = AppReceipt.legacyPurchase(transactionReceipt: text)
    _ = AppReceipt.legacyPurchase(transactionReceipt: Data(bytes).base64EncodedString())
    return 0
}

exit(FuzzDriver.run(fuzzOneInput))
