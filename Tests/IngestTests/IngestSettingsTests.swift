// SPDX-License-Identifier: Apache-2.0
import Shared
import Testing

@testable import Ingest

/// How `ingest` reads `ENTITLEMENT_LEEWAY_SECONDS`, `READ_API_ENVIRONMENT` and `APPLE_ONLINE_CHECKS`.
struct IngestSettingsTests {
    static func settings(_ values: [String: String]) throws -> IngestSettings {
        try IngestSettings(environment: EnvironmentValues(values.merging(["DATABASE_URL": "postgres://x@127.0.0.1:1/x"]) { $1 }))
    }

    @Test func aReadReplicaIsOptionalAndItsErrorsNameItsVariable() throws {
        #expect(try Self.settings([:]).readDatabase == nil)
        let settings = try Self.settings(["READ_DATABASE_URL": "postgres://reader@replica.internal:5433/sluice", "READ_MAX_LAG_SECONDS": "2.5"])
        #expect(settings.readDatabase?.host == "replica.internal" && settings.readDatabase?.port == 5433)
        #expect(settings.readMaximumLag == 2.5)
        #expect(try Self.settings([:]).readMaximumLag == 5)
        for (name, value) in [("READ_DATABASE_URL", "mysql://x@h/db"), ("READ_DATABASE_URL", "postgres://x@h"), ("READ_MAX_LAG_SECONDS", "0")] {
            let error = #expect(throws: ConfigurationError.self) { try Self.settings([name: value]) }
            #expect(error?.variable == name, "\(name)=\(value)")
        }
    }

    @Test func theLeewayIsAnHourByDefault() throws {
        #expect(try Self.settings([:]).entitlementLeewaySeconds == 3_600)
        #expect(try Self.settings(["ENTITLEMENT_LEEWAY_SECONDS": "0"]).entitlementLeewaySeconds == 0)
    }

    @Test(arguments: ["-1", "604801", "an hour"])
    func aBadLeewayIsRefusedNamingItsVariable(text: String) throws {
        let error = #expect(throws: ConfigurationError.self) { try Self.settings(["ENTITLEMENT_LEEWAY_SECONDS": text]) }
        #expect(error?.variable == "ENTITLEMENT_LEEWAY_SECONDS")
    }

    @Test(arguments: [(nil, EnvironmentFilter.all), ("production", .production), ("Sandbox", .sandbox), ("all", .all)])
    func theReadEnvironmentIsAllByDefault(text: String?, filter: EnvironmentFilter) throws {
        #expect(try Self.settings(text.map { ["READ_API_ENVIRONMENT": $0] } ?? [:]).readEnvironment == filter)
    }

    @Test(arguments: ["live", "test", "prod"])
    func aBadReadEnvironmentIsRefusedNamingItsVariable(text: String) throws {
        let error = #expect(throws: ConfigurationError.self) { try Self.settings(["READ_API_ENVIRONMENT": text]) }
        #expect(error?.variable == "READ_API_ENVIRONMENT")
    }

    @Test(arguments: [(nil, false), ("false", false), ("true", true), ("YES", true), ("0", false)])
    func onlineChecksAreOffUnlessAskedFor(text: String?, on: Bool) throws {
        let checks = try Self.settings(text.map { ["APPLE_ONLINE_CHECKS": $0] } ?? [:]).appleRevocationCheck
        #expect((checks != nil) == on)
    }

    @Test(arguments: ["enabled", "ocsp", "2"])
    func aBadOnlineChecksValueIsRefusedNamingItsVariable(text: String) throws {
        let error = #expect(throws: ConfigurationError.self) { try Self.settings(["APPLE_ONLINE_CHECKS": text]) }
        #expect(error?.variable == "APPLE_ONLINE_CHECKS")
    }
}
