// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Testing

@testable import Worker

/// The console's pure parts: keys, session cookies and CSRF tokens, forms, the origin check.
struct ConsoleSessionTests {
    let keys = try! OperatorKeys(["a_first_operator_key_of_32_chars_0", "a_second_operator_key_of_32_chars_"])
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func operatorKeysAreRequiredAndLong() throws {
        #expect(throws: (any Error).self) { try OperatorKeys([]) }
        #expect(throws: (any Error).self) { try OperatorKeys(["short"]) }
        #expect(throws: (any Error).self) { try OperatorKeys(["a_first_operator_key_of_32_chars_0", "x"]) }
        #expect(keys.index(of: "a_second_operator_key_of_32_chars_") == 1)
        #expect(keys.index(of: "a_first_operator_key_of_32_chars_0") == 0)
        #expect(keys.index(of: "a_first_operator_key_of_32_chars_1") == nil)
        #expect(keys.index(of: "") == nil)
    }

    @Test func aSessionIsAcceptedUntilItExpiresAndOnlyWithItsKey() throws {
        let (token, cookie) = ConsoleSessionToken.issue(keyIndex: 1, keys: keys, now: now)
        #expect(ConsoleSessionToken.verify(cookie, keys: keys, now: now) == token)
        #expect(ConsoleSessionToken.verify(cookie, keys: keys, now: now.addingTimeInterval(ConsoleSessionToken.lifetime - 1)) == token)
        #expect(ConsoleSessionToken.verify(cookie, keys: keys, now: now.addingTimeInterval(ConsoleSessionToken.lifetime + 1)) == nil)
        // The key that signed it is removed: its sessions end.
        let withoutIt = try OperatorKeys(["a_first_operator_key_of_32_chars_0"])
        #expect(ConsoleSessionToken.verify(cookie, keys: withoutIt, now: now) == nil)

        let parts = cookie.split(separator: ".").map(String.init)
        let forged: [(String, String)] = [
            ("a later expiry", "\(Int(parts[0])! + 86_400).\(parts[1]).\(parts[2])"),
            ("another nonce", "\(parts[0]).AAAAAAAAAAAAAAAAAAAAAA.\(parts[2])"),
            ("a flipped mac", "\(parts[0]).\(parts[1]).\(String(parts[2].reversed()))"),
            ("no mac", "\(parts[0]).\(parts[1])."), ("garbage", "not-a-cookie"), ("empty", ""),
        ]
        for (name, text) in forged {
            #expect(ConsoleSessionToken.verify(text, keys: keys, now: now) == nil, "\(name)")
        }
    }

    @Test func csrfTokensBelongToOneSession() {
        let (first, _) = ConsoleSessionToken.issue(keyIndex: 0, keys: keys, now: now)
        let (second, _) = ConsoleSessionToken.issue(keyIndex: 0, keys: keys, now: now)
        #expect(first.acceptsCSRF(first.csrfToken(keys: keys), keys: keys))
        #expect(!first.acceptsCSRF(second.csrfToken(keys: keys), keys: keys))
        #expect(!first.acceptsCSRF(nil, keys: keys))
        #expect(!first.acceptsCSRF("", keys: keys))
    }

    @Test func formsDecodeAsBrowsersEncodeThem() {
        let form = FormFields("key=a+b%2Bc&csrf=x%3D&key=second&empty=&flag&bad=%zz&%E2%9C%93=yes")
        #expect(form["key"] == "a b+c")
        #expect(form["csrf"] == "x=")
        #expect(form["empty"] == nil)
        #expect(form["flag"] == nil)
        #expect(form["bad"] == "%zz")
        #expect(form["✓"] == "yes")
        #expect(FormFields(FormFields.encode([("id", "user 1/ü&x=y")]))["id"] == "user 1/ü&x=y")
    }

    @Test(arguments: [
        ([:], true),
        (["Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8090", "Host": "127.0.0.1:8090"], true),
        (["Sec-Fetch-Site": "none"], true),
        (["Sec-Fetch-Site": "cross-site"], false),
        (["Sec-Fetch-Site": "same-site"], false),
        (["Origin": "https://evil.example", "Host": "console.example"], false),
        (["Origin": "https://console.example", "Host": "console.example"], true),
        (["Origin": "http://127.0.0.1:9999", "Host": "127.0.0.1:8090"], false),
        (["Origin": "null", "Host": "127.0.0.1:8090"], false),
    ] as [([String: String], Bool)])
    func postsAreAcceptedOnlyFromTheConsolesOrigin(headers: [String: String], accepted: Bool) {
        var fields = HTTPFields()
        for (name, value) in headers where name != "Host" { fields[HTTPField.Name(name)!] = value }
        #expect(OperatorAuthMiddleware.isSameOrigin(fields, authority: headers["Host"]) == accepted)
    }
}
