// SPDX-License-Identifier: Apache-2.0
import Foundation
import SwiftASN1

/// What a StoreKit 1 receipt names, read as Apple's `ReceiptUtility` reads it: enough to ask the
/// App Store Server API for the customer's transactions, and nothing to trust. The receipt's
/// signature is not checked (Apple retired `verifyReceipt`); every transaction Sluice stores comes
/// back from the App Store Server API as signed JWS and is verified like any other.
///
/// Two formats (docs/receipts.md):
/// - an **app receipt** (`Bundle.main.appStoreReceiptURL`): PKCS#7 SignedData, BER-encoded (an
///   Xcode receipt uses indefinite lengths), whose content is a SET of attributes
///   `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`; type 17 is an in-app
///   purchase, itself a SET of such attributes (1702 product id, 1703 transaction id, 1705
///   original transaction id);
/// - a **transaction receipt** (`SKPaymentTransaction.transactionReceipt`, before iOS 7): an
///   old-style property list whose `purchase-info` is base64 of one naming `transaction-id`.
public struct AppReceipt: Sendable, Equatable {
    /// One in-app purchase of an app receipt.
    public struct Purchase: Sendable, Equatable {
        public var transactionID: String?
        public var originalTransactionID: String?
        public var productID: String?
    }

    /// Attribute 2.
    public var bundleID: String?
    /// Attribute 0: `Production`, `ProductionSandbox`, `Xcode`, … when the receipt says.
    public var receiptType: String?
    /// Attribute 17, in the receipt's order.
    public var purchases: [Purchase]

    /// Why a receipt could not be read.
    public struct Problem: Error, Equatable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// The first in-app purchase's transaction id, as Apple's `ReceiptUtility` returns it; `nil`
    /// for a receipt with no in-app purchase.
    public var transactionID: String? { purchases.lazy.compactMap(\.transactionID).first }

    /// The largest receipt read, base64 included (Apple's receipts are a few KB; one with years of
    /// renewals some hundred).
    public static let largestBase64 = 4 << 20

    static let inAppPurchase = 17
    static let bundleIDType = 2
    static let receiptTypeType = 0
    static let productIDType = 1702
    static let transactionIDType = 1703
    static let originalTransactionIDType = 1705

    /// Reads an app receipt from its base64 text.
    public init(base64 text: String) throws {
        guard text.utf8.count <= Self.largestBase64 else { throw Problem("the receipt is larger than \(Self.largestBase64) bytes") }
        guard let data = Data(base64Encoded: text, options: .ignoreUnknownCharacters), !data.isEmpty else {
            throw Problem("the receipt is not base64")
        }
        try self.init(der: Array(data))
    }

    /// Reads an app receipt from its bytes.
    public init(der bytes: [UInt8]) throws {
        let root: ASN1Node
        do { root = try BER.parse(bytes) } catch { throw Problem("the receipt is not BER-encoded ASN.1") }
        // ContentInfo ::= SEQUENCE { contentType OID (signedData), content [0] EXPLICIT SignedData }
        let contentInfo = try Self.children(of: root, "the receipt's ContentInfo")
        guard contentInfo.count >= 2, contentInfo[0].identifier == .objectIdentifier,
            Self.primitive(contentInfo[0]) == Self.signedDataOID
        else { throw Problem("the receipt is not PKCS#7 SignedData") }
        let signedData = try Self.single(try Self.children(of: contentInfo[1], "the [0] of ContentInfo"), "SignedData")
        // SignedData ::= SEQUENCE { version, digestAlgorithms SET, encapContentInfo SEQUENCE, … }
        let fields = try Self.children(of: signedData, "SignedData")
        guard fields.count >= 3 else { throw Problem("SignedData has no content") }
        let encapsulated = try Self.children(of: fields[2], "the encapsulated content")
        guard encapsulated.count >= 2 else { throw Problem("the receipt's content is missing") }
        let payloadHolder = try Self.single(try Self.children(of: encapsulated[1], "the [0] of the encapsulated content"), "the content")
        let payload = try Self.octets(payloadHolder, "the receipt's payload")
        let attributes = try Self.attributes(payload, "the receipt's payload")
        var receipt = AppReceipt(bundleID: nil, receiptType: nil, purchases: [])
        for (type, value) in attributes {
            switch type {
            case Self.bundleIDType: receipt.bundleID = Self.string(value)
            case Self.receiptTypeType: receipt.receiptType = Self.string(value)
            case Self.inAppPurchase:
                var purchase = Purchase()
                for (field, fieldValue) in try Self.attributes(value, "an in-app purchase") {
                    switch field {
                    case Self.productIDType: purchase.productID = Self.string(fieldValue)
                    case Self.transactionIDType: purchase.transactionID = Self.string(fieldValue)
                    case Self.originalTransactionIDType: purchase.originalTransactionID = Self.string(fieldValue)
                    default: continue
                    }
                }
                receipt.purchases.append(purchase)
            default: continue
            }
        }
        self = receipt
    }

    init(bundleID: String?, receiptType: String?, purchases: [Purchase]) {
        self.bundleID = bundleID
        self.receiptType = receiptType
        self.purchases = purchases
    }

    /// What a legacy (iOS 6) transaction receipt names: its `purchase-info`'s `transaction-id`,
    /// and the app's bundle id (`bid`) when it says one. `nil` when it names no transaction.
    public static func legacyPurchase(transactionReceipt text: String) -> (transactionID: String, bundleID: String?)? {
        guard text.utf8.count <= largestBase64, let data = Data(base64Encoded: text, options: .ignoreUnknownCharacters),
            let info = quoted("purchase-info", in: String(decoding: data, as: UTF8.self)),
            let purchase = Data(base64Encoded: info, options: .ignoreUnknownCharacters)
        else { return nil }
        let fields = String(decoding: purchase, as: UTF8.self)
        guard let transactionID = quoted("transaction-id", in: fields) else { return nil }
        return (transactionID, quoted("bid", in: fields, allowing: isBundleIDCharacter))
    }

    /// A character of a bundle id: letters, digits, `-` and `.` (App Store Connect's rule).
    static func isBundleIDCharacter(_ c: Character) -> Bool {
        c.isASCII && (c.isLetter || c.isNumber || c == "-" || c == ".")
    }

    /// A character of base64's alphabet (what Apple's `ReceiptUtility` matches a value with).
    static func isBase64Character(_ c: Character) -> Bool {
        c.isASCII && (c.isLetter || c.isNumber || c == "+" || c == "/" || c == "=")
    }

    /// The value of `"key" = "value";` in an old-style property list, when each of its characters
    /// is `allowing`'s (base64's by default, as Apple's `ReceiptUtility` matches it).
    static func quoted(_ key: String, in text: String, allowing: (Character) -> Bool = isBase64Character) -> String? {
        guard let keyRange = text.range(of: "\"\(key)\"") else { return nil }
        var rest = text[keyRange.upperBound...].drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard rest.first == "=" else { return nil }
        rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard rest.first == "\"" else { return nil }
        rest = rest.dropFirst()
        let value = rest.prefix(while: allowing)
        guard !value.isEmpty, rest.dropFirst(value.count).first == "\"" else { return nil }
        return String(value)
    }

    // MARK: ASN.1

    /// 1.2.840.113549.1.7.2, as encoded.
    static let signedDataOID: ArraySlice<UInt8> = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]

    private static func children(of node: ASN1Node, _ what: String) throws -> [ASN1Node] {
        guard case .constructed(let nodes) = node.content else { throw Problem("\(what) is not constructed") }
        return Array(nodes)
    }

    private static func single(_ nodes: [ASN1Node], _ what: String) throws -> ASN1Node {
        guard let first = nodes.first else { throw Problem("\(what) is missing") }
        return first
    }

    private static func primitive(_ node: ASN1Node) -> ArraySlice<UInt8>? {
        guard case .primitive(let bytes) = node.content else { return nil }
        return bytes
    }

    /// An OCTET STRING's bytes; BER may split them into a constructed string of chunks.
    private static func octets(_ node: ASN1Node, _ what: String, depth: Int = 0) throws -> [UInt8] {
        guard node.identifier.tagNumber == ASN1Identifier.octetString.tagNumber, node.identifier.tagClass == .universal, depth < 8 else {
            throw Problem("\(what) is not an OCTET STRING")
        }
        switch node.content {
        case .primitive(let bytes): return Array(bytes)
        case .constructed(let chunks): return try chunks.flatMap { try octets($0, what, depth: depth + 1) }
        }
    }

    /// A SET of `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`, as (type, value).
    private static func attributes(_ bytes: [UInt8], _ what: String) throws -> [(Int, [UInt8])] {
        let set: ASN1Node
        do { set = try BER.parse(bytes) } catch { throw Problem("\(what) is not BER-encoded ASN.1") }
        guard set.identifier == .set else { throw Problem("\(what) is not a SET of attributes") }
        var found: [(Int, [UInt8])] = []
        for attribute in try children(of: set, what) {
            let fields = try children(of: attribute, "an attribute of \(what)")
            guard fields.count >= 3, fields[0].identifier == .integer, let typeBytes = primitive(fields[0]), let type = integer(typeBytes)
            else { throw Problem("an attribute of \(what) has no integer type") }
            found.append((type, try octets(fields[2], "the value of attribute \(type)")))
        }
        return found
    }

    /// A small non-negative INTEGER's value; `nil` for anything else.
    private static func integer(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 4, bytes.first! & 0x80 == 0 else { return nil }
        return bytes.reduce(0) { $0 << 8 | Int($1) }
    }

    /// An attribute value holding a UTF8String, IA5String or PrintableString; `nil` otherwise.
    private static func string(_ bytes: [UInt8]) -> String? {
        guard let node = try? BER.parse(bytes), [.utf8String, .ia5String, .printableString].contains(node.identifier),
            let text = primitive(node)
        else { return nil }
        return String(validating: Array(text), as: UTF8.self)
    }
}
