// swift-tools-version:6.2
// SPDX-License-Identifier: Apache-2.0
import PackageDescription

/// The flags of a fuzz build (scripts/fuzz), compiling and linking.
let fuzzerFlags = ["-sanitize=fuzzer,address"]

/// `SLUICE_FUZZ_INSTRUMENT=own` (with `SLUICE_FUZZ=1`): only this package's modules are built with
/// the fuzzer's coverage and AddressSanitizer, so a fuzz build in a debug build's `.build` (CI's
/// last stage) reuses every dependency as it was compiled, and recompiles only these. Without it,
/// scripts/fuzz passes the flags to every module (`-Xswiftc`), dependencies' parsers included.
var fuzzesOwnModulesOnly: Bool {
    Context.environment["SLUICE_FUZZ"] == "1" && Context.environment["SLUICE_FUZZ_INSTRUMENT"] == "own"
}

/// Settings shared by every target: Swift 6 language mode (strict concurrency), explicit `any`,
/// and imports the compiler holds to what each file and target declares: a member is visible only
/// where its module is imported (`MemberImportVisibility`), and an import is internal unless it
/// says `public` (`InternalImportsByDefault`), so every target below lists exactly the products
/// it imports.
///
/// `SLUICE_WARNINGS_AS_ERRORS=1` (set by `.ci/run` for every build it makes) turns each warning of
/// the project's own targets into an error, so the build stays warning-free; dependencies are
/// not affected. A fuzz build of own modules only adds the fuzzer's flags (above).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
] + (Context.environment["SLUICE_WARNINGS_AS_ERRORS"] == "1" ? [.treatAllWarnings(as: .error)] : [])
    + (fuzzesOwnModulesOnly ? [.unsafeFlags(fuzzerFlags)] : [])

/// A product of one of the packages below, by its module name.
func product(_ name: String) -> Target.Dependency {
    let packages = [
        "Hummingbird": "hummingbird", "HummingbirdTesting": "hummingbird", "PostgresNIO": "postgres-nio",
        "X509": "swift-certificates", "Crypto": "swift-crypto", "CryptoExtras": "swift-crypto", "SwiftASN1": "swift-asn1", "NIOCore": "swift-nio",
        "NIOFoundationCompat": "swift-nio", "NIOHTTP1": "swift-nio", "NIOPosix": "swift-nio", "HTTPTypes": "swift-http-types",
        "AsyncHTTPClient": "async-http-client", "ServiceLifecycle": "swift-service-lifecycle", "Logging": "swift-log",
        "Prometheus": "swift-prometheus", "Mustache": "swift-mustache", "ArgumentParser": "swift-argument-parser", "Yams": "Yams", "UnixSignals": "swift-service-lifecycle",
        "ServiceLifecycleTestKit": "swift-service-lifecycle",
    ]
    return .product(name: name, package: packages[name]!)
}

/// A benchmark program in `Benchmarks/<name>` (they all parse their options with ArgumentParser).
func benchmarkProgram(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(
        name: name,
        dependencies: dependencies + [product("ArgumentParser")],
        path: "Benchmarks/\(name)",
        swiftSettings: swiftSettings)
}

let package = Package(
    name: "sluice",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ingest", targets: ["Ingest"]),
        .executable(name: "worker", targets: ["Worker"]),
        .executable(name: "sluice-dev", targets: ["DevTool"]),
        .library(name: "Shared", targets: ["Shared"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
    ],
    targets: [
        .target(
            name: "Shared",
            dependencies: [
                product("ArgumentParser"), product("AsyncHTTPClient"), product("Crypto"), product("CryptoExtras"), product("Logging"),
                product("NIOCore"), product("NIOFoundationCompat"), product("NIOHTTP1"), product("NIOPosix"), product("PostgresNIO"), product("ServiceLifecycle"), product("SwiftASN1"),
                product("UnixSignals"), product("X509"),
            ],
            swiftSettings: swiftSettings
        ),
        /// The apply machinery only the worker uses: the store every event's reads and writes go
        /// through, what a batch loads ahead, and the writes held until one statement sends them.
        .target(
            name: "Apply",
            dependencies: ["Shared", product("Logging"), product("PostgresNIO")],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "Ingest",
            dependencies: [
                "Shared", product("ArgumentParser"), product("AsyncHTTPClient"), product("Crypto"), product("HTTPTypes"), product("Hummingbird"),
                product("Logging"), product("NIOCore"), product("NIOFoundationCompat"), product("PostgresNIO"), product("Prometheus"),
                product("ServiceLifecycle"), product("UnixSignals"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "Worker",
            dependencies: [
                "Apply", "Shared", product("ArgumentParser"), product("AsyncHTTPClient"), product("Crypto"), product("HTTPTypes"), product("Hummingbird"),
                product("Logging"), product("Mustache"), product("NIOCore"), product("NIOFoundationCompat"), product("NIOHTTP1"),
                product("PostgresNIO"), product("Prometheus"), product("ServiceLifecycle"), product("UnixSignals"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "DevSupport",
            dependencies: [
                "Shared", product("Crypto"), product("CryptoExtras"), product("HTTPTypes"), product("Hummingbird"), product("NIOCore"),
                product("NIOFoundationCompat"), product("SwiftASN1"), product("X509"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "DevTool",
            dependencies: [
                "Shared", "DevSupport", product("ArgumentParser"), product("AsyncHTTPClient"), product("HTTPTypes"), product("Hummingbird"),
                product("Logging"), product("NIOCore"), product("NIOFoundationCompat"), product("NIOHTTP1"),
            ],
            swiftSettings: swiftSettings
        ),
        benchmarkProgram("QueueBenchmark", ["Shared", "DevSupport", product("Logging"), product("PostgresNIO")]),
        benchmarkProgram("ApplyBenchmark", ["Shared", "DevSupport", product("Logging"), product("NIOFoundationCompat"), product("PostgresNIO")]),
        benchmarkProgram("ForwardBenchmark", [
            "Shared", product("AsyncHTTPClient"), product("Hummingbird"), product("Logging"), product("NIOCore"), product("NIOHTTP1"),
            product("PostgresNIO"),
        ]),
        benchmarkProgram("IngestLoad", ["DevSupport", product("AsyncHTTPClient"), product("NIOCore"), product("NIOFoundationCompat"), product("NIOHTTP1")]),
        benchmarkProgram("LatencyBenchmark", ["DevSupport", product("AsyncHTTPClient"), product("NIOCore"), product("NIOFoundationCompat"), product("NIOHTTP1")]),
        benchmarkProgram("SyncFlood", [product("AsyncHTTPClient"), product("NIOCore"), product("NIOHTTP1")]),
        benchmarkProgram("CheckoutBenchmark", [
            "DevSupport", product("AsyncHTTPClient"), product("Logging"), product("NIOCore"), product("NIOFoundationCompat"), product("NIOHTTP1"),
            product("PostgresNIO"),
        ]),
        .target(
            name: "TestSupport",
            dependencies: [
                "Shared", "DevSupport", product("Crypto"), product("HTTPTypes"), product("Hummingbird"), product("Logging"), product("NIOCore"),
                product("NIOFoundationCompat"), product("PostgresNIO"), product("SwiftASN1"), product("X509"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SharedTests",
            dependencies: [
                "Shared", "TestSupport", "DevSupport", product("Crypto"), product("Logging"), product("NIOCore"), product("NIOFoundationCompat"),
                product("PostgresNIO"), product("ServiceLifecycle"), product("ServiceLifecycleTestKit"), product("UnixSignals"), product("X509"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ApplyTests",
            dependencies: ["Apply", "Shared", "TestSupport", product("Logging"), product("PostgresNIO")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "IngestTests",
            dependencies: [
                "Ingest", "Shared", "TestSupport", "DevSupport", product("Crypto"), product("HTTPTypes"), product("Hummingbird"),
                product("HummingbirdTesting"), product("Logging"), product("NIOCore"), product("NIOFoundationCompat"), product("PostgresNIO"),
                product("X509"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WorkerTests",
            dependencies: [
                "Worker", "Apply", "Ingest", "Shared", "TestSupport", "DevSupport", product("AsyncHTTPClient"), product("Crypto"),
                product("HTTPTypes"), product("Hummingbird"), product("HummingbirdTesting"), product("Logging"), product("NIOCore"),
                product("Mustache"), product("NIOFoundationCompat"), product("PostgresNIO"), product("Prometheus"),
                product("ServiceLifecycle"), product("ServiceLifecycleTestKit"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DevToolTests",
            dependencies: ["DevTool", "DevSupport", product("NIOCore")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DeployTests",
            dependencies: ["TestSupport", product("Crypto"), product("Yams")],
            swiftSettings: swiftSettings
        ),
    ]
)

// MARK: Fuzz targets (scripts/fuzz)

/// libFuzzer targets, one executable per parser that faces the internet. They exist only when
/// `SLUICE_FUZZ=1`, because they link libFuzzer and build only with
/// `-Xswiftc -sanitize=fuzzer,address` (scripts/fuzz sets both, building in `.build-fuzz`).
if Context.environment["SLUICE_FUZZ"] == "1" {
    package.targets.append(.target(name: "CFuzzDriver", path: "Fuzz/Sources/CFuzzDriver"))
    package.targets.append(
        .target(
            name: "FuzzSupport",
            dependencies: ["Shared", "DevSupport", "CFuzzDriver", product("X509")],
            path: "Fuzz/Sources/FuzzSupport",
            swiftSettings: swiftSettings))
    for name in ["FuzzStripeSignature", "FuzzCompactJWS", "FuzzX5CChain", "FuzzRequestBody", "FuzzAppReceipt", "FuzzPlayPush"] {
        package.targets.append(
            .executableTarget(
                name: name,
                dependencies: ["Shared", "FuzzSupport", product("CryptoExtras"), product("NIOCore")],
                path: "Fuzz/Sources/\(name)",
                swiftSettings: swiftSettings,
                // lld links libFuzzer's and AddressSanitizer's runtimes.
                linkerSettings: fuzzesOwnModulesOnly ? [.unsafeFlags(fuzzerFlags + ["-Xclang-linker", "-fuse-ld=lld"])] : []))
        package.products.append(.executable(name: name, targets: [name]))
    }
}

// MARK: ordo-one benchmarks (Benchmarks/VerificationBenchmarks)

/// Verification measured with ordo-one/benchmark (wall clock, throughput, allocations per
/// operation through its malloc interposer). Only when `SLUICE_BENCH=1`, so that builds and CI
/// never resolve or compile the benchmark package:
/// `SLUICE_BENCH=1 swift package --scratch-path .build-bench benchmark --target VerificationBenchmarks`.
if Context.environment["SLUICE_BENCH"] == "1" {
    package.dependencies.append(.package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]))
    package.targets.append(
        .executableTarget(
            name: "VerificationBenchmarks",
            dependencies: [
                "Shared", "DevSupport", .product(name: "Benchmark", package: "benchmark"), product("NIOCore"), product("NIOFoundationCompat"),
            ],
            path: "Benchmarks/VerificationBenchmarks",
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]))
}
