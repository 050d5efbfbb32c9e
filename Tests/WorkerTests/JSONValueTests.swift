// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

@testable import Worker

/// `JSONValue[path]` walks its dotted path in place; these tables hold it to what the plain
/// reading (split the path, then look each component up) answers.
struct JSONValueTests {
    static let object = try! JSONValue.parse(Data(#"""
        {"id": "sub_1", "items": {"data": [{"price": {"product": "prod_A", "unit_amount": 500}}, {"price": null}]},
         "": {"empty": true}, "metadata": {"user.id": "u1", "user": {"id": "nested"}}, "count": 2, "list": [1, [2, 3]]}
        """#.utf8))

    static let paths = [
        "id", "items.data.0.price.product", "items.data.0.price.unit_amount", "items.data.1.price", "items.data.1.price.product",
        "items.data.2.price", "items.data.-1", "items.data.x", "items.data.00.price.product", "items..data.0.price.product",
        ".id", "id.", "", ".", "..", "missing", "missing.deeper", "id.deeper", "count.0", "list.1.0", "list.1.2", "list.01",
        "metadata.user.id", "metadata.user", "items.data.0", "é.x", "items.data.9999999999999999999999",
    ]

    /// The plain reading, as its reference: split the path, then look each component up.
    static func plainReading(_ value: JSONValue, _ path: String) -> JSONValue {
        plainReading(value, path.split(separator: ".")[...])
    }

    static func plainReading(_ value: JSONValue, _ components: ArraySlice<Substring>) -> JSONValue {
        guard let first = components.first else { return value }
        let next: JSONValue? = switch value {
        case .object(let members): members[String(first)]
        case .array(let elements): Int(first).flatMap { elements.indices.contains($0) ? elements[$0] : nil }
        default: nil
        }
        return next.map { plainReading($0, components.dropFirst()) } ?? .null
    }

    @Test(arguments: paths)
    func aPathReadsAsThePlainReadingDoes(_ path: String) {
        #expect(Self.object[path] == Self.plainReading(Self.object, path), "path \(path)")
    }

    @Test func pathsFindWhatTheyName() {
        #expect(Self.object["items.data.0.price.product"].string == "prod_A")
        #expect(Self.object["items.data.0.price.unit_amount"].int == 500)
        #expect(Self.object["list.1.0"].int == 2)
        #expect(Self.object["metadata.user.id"].string == "nested")
        #expect(Self.object["items..data.0.price.product"].string == "prod_A")
        #expect(Self.object["items.data.2.price"] == .null)
        #expect(Self.object["id.deeper"] == .null)
        #expect(Self.object[""] == Self.object)
    }
}
