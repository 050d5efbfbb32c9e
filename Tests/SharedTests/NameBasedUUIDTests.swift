// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Testing

/// UUIDv5 as RFC 9562 and Python's `uuid.uuid5` compute it (the getting-started snippet uses Python's).
struct NameBasedUUIDTests {
    static let dns = UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8")!

    @Test(arguments: [
        ("python.org", "886313E1-3B8A-5372-9B90-0C9AEE199E5D"),
        ("www.example.com", "2ED6657D-E927-568B-95E1-2665A8AEA6A2"),
    ])
    func matchesPublishedVectors(name: String, expected: String) {
        #expect(NameBasedUUID.version5(namespace: Self.dns, name: name).uuidString == expected)
    }

    @Test func theDevelopmentUsersTokenIsStable() {
        let token = NameBasedUUID.version5(namespace: NameBasedUUID.developmentNamespace, name: "user_dev")
        #expect(token == NameBasedUUID.version5(namespace: NameBasedUUID.developmentNamespace, name: "user_dev"))
        #expect(token != NameBasedUUID.version5(namespace: NameBasedUUID.developmentNamespace, name: "user_dev2"))
        #expect(token.uuidString.dropFirst(14).first == "5", "version 5")
    }
}
