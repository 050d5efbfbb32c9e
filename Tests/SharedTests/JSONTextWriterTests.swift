// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

/// The JSON text the worker's batch arguments are written as.
struct JSONTextWriterTests {
    @Test func containersMembersAndElementsAreSeparatedByCommasOnly() {
        var json = JSONTextWriter()
        json.array { array in
            array.object { row in
                row.member("n", 0)
                row.member("id", "a")
                row.member("none", nil as String?)
                row.member("count", Int64(-7))
                row.member("missing", nil as Int64?)
                row.member("yes", true)
                row.member("maybe", nil as Bool?)
                row.member("names", ["x", "y"])
                row.member("empty", [])
            }
            array.object { _ in }
            array.element("last")
        }
        #expect(json.text == #"[{"n":0,"id":"a","none":null,"count":-7,"missing":null,"yes":true,"maybe":null,"names":["x","y"],"empty":[]},{},"last"]"#)
    }

    @Test func nestedMembersKeepTheirOwnSeparators() {
        var json = JSONTextWriter()
        json.object { o in
            o.member("a") { $0.array { array in array.element(Int64(1)); array.element(Int64(2)) } }
            o.member("b") { $0.object { inner in inner.member("c", false) } }
            o.member("d", "e")
        }
        #expect(json.text == #"{"a":[1,2],"b":{"c":false},"d":"e"}"#)
    }

    @Test(arguments: [
        ("quote \" and backslash \\", #""quote \" and backslash \\""#),
        ("line\nreturn\rtab\t", #""line\nreturn\rtab\t""#),
        ("\u{0}\u{1}\u{1F}", #""\u0000\u0001\u001f""#),
        ("\u{8}\u{C}", #""\b\f""#),
        ("slash / stays", #""slash / stays""#),
        ("é ☃ 😀 \u{2028}", "\"é ☃ 😀 \u{2028}\""),
    ])
    func stringsAreEscapedAsRFC8259Requires(value: String, expected: String) throws {
        var json = JSONTextWriter()
        json.element(value)
        #expect(json.text == expected)
        // And a JSON parser reads back the very string.
        let parsed = try JSONSerialization.jsonObject(with: Data(json.text.utf8), options: .fragmentsAllowed) as? String
        #expect(parsed == value)
    }

    @Test func extremeIntegersAreWrittenExactly() throws {
        var json = JSONTextWriter()
        json.array { array in
            array.element(Int64.max)
            array.element(Int64.min)
        }
        #expect(json.text == "[9223372036854775807,-9223372036854775808]")
    }
}
