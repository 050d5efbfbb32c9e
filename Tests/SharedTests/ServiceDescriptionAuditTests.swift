// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// ServiceLifecycle logs each service by its description, and a struct's default description
/// prints every stored property — a `DatabaseURL` with its password, a recovery setting with a
/// provider key (SecurityTests caught the first at trace level). So every type that conforms to
/// `Service` in its declaration says what it is with `CustomStringConvertible`.
struct ServiceDescriptionAuditTests {
    @Test func everyServiceDescribesItselfWithoutItsFields() throws {
        let declaration = try Regex(#"(struct|final class|class|actor|enum) +\w+(<[^>]*>)? *:[^{]*\bService\b[^{]*\{"#)
        var undescribed: [String] = []
        var services = 0
        for (path, text) in try SQLBindParameterAuditTests.swiftFiles() {
            for match in text.matches(of: declaration) {
                services += 1
                if !text[match.range].contains("CustomStringConvertible") { undescribed.append("\(path): \(text[match.range].prefix(80))") }
            }
        }
        #expect(services >= 10, "the audit found only \(services) services: its pattern is wrong")
        #expect(undescribed.isEmpty, "\(undescribed)")
    }
}
