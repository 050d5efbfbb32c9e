// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Logging
import Shared
import Testing

/// `SANDBOX_ACCESS` and `SANDBOX_USERS` as a table: who a sandbox entitlement gives access to.
struct SandboxAccessTests {
    static let hashOfTester = "sha256:" + SHA256.hash(data: Data("tester-2".utf8)).map { String(format: "%02x", $0) }.joined()

    static func access(_ rule: String?, _ users: String? = nil) throws -> SandboxAccess {
        var values: [String: String] = [:]
        values["SANDBOX_ACCESS"] = rule
        values["SANDBOX_USERS"] = users
        return try SandboxAccess(environment: EnvironmentValues(values))
    }

    @Test(arguments: [
        // rule, users, environment, user, grants
        (nil, nil, PurchaseEnvironment.sandbox, "anyone", true),
        ("anybody", nil, .sandbox, "anyone", true),
        ("nobody", nil, .sandbox, "anyone", false),
        ("nobody", nil, .production, "anyone", true),
        ("listed", "tester-1", .sandbox, "tester-1", true),
        ("listed", "tester-1", .sandbox, "Tester-1", false),
        ("listed", "tester-1", .sandbox, "someone", false),
        ("listed", "tester-1,\(hashOfTester)", .sandbox, "tester-2", true),
        ("listed", hashOfTester.uppercased().replacingOccurrences(of: "SHA256:", with: "sha256:"), .sandbox, "tester-2", true),
        ("listed", hashOfTester, .sandbox, hashOfTester, false),
        ("listed", "tester-1", .production, "someone", true),
        ("LISTED", "tester-1", .sandbox, "tester-1", true),
    ] as [(String?, String?, PurchaseEnvironment, String, Bool)])
    func whoIsGranted(rule: String?, users: String?, environment: PurchaseEnvironment, user: String, grants: Bool) throws {
        #expect(try Self.access(rule, users).grants(environment, to: user) == grants)
    }

    @Test func aSandboxEntitlementWithoutAUserIsListedForNobody() throws {
        #expect(try !Self.access("listed", "tester-1").grants(.sandbox, to: nil))
        #expect(try Self.access("anybody").grants(.sandbox, to: nil))
    }

    @Test(arguments: [
        ("everyone", nil, "SANDBOX_ACCESS"),
        ("listed", nil, "SANDBOX_USERS"),
        ("anybody", "tester-1", "SANDBOX_USERS"),
        ("listed", "sha256:abc", "SANDBOX_USERS"),
        ("listed", "sha256:" + String(repeating: "zz", count: 32), "SANDBOX_USERS"),
    ] as [(String, String?, String)])
    func whatCannotMeanWhatItsWriterMeantIsRefused(rule: String, users: String?, variable: String) {
        let error = #expect(throws: ConfigurationError.self) { try Self.access(rule, users) }
        #expect(error?.variable == variable)
    }

    @Test func theRiskierSettingsAreWarnedAbout() throws {
        #expect(try Self.access(nil).startWarning?.contains("any user") == true)
        #expect(try Self.access(nil).startLogLevel == .notice)
        #expect(try Self.access("nobody").startWarning?.contains("App Review") == true)
        #expect(try Self.access("nobody").startLogLevel == .warning)
        #expect(try Self.access("listed", "tester-1").startWarning == nil)
    }
}
