// swift-tools-version:6.2
// SPDX-License-Identifier: Apache-2.0
import PackageDescription

/// Settings shared by every target: Swift 6 language mode (strict concurrency) and explicit `any`.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

/// A benchmark program in `Benchmarks/<name>` (they all parse their options with ArgumentParser).
func benchmarkProgram(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(
        name: name,
        dependencies: dependencies + [.product(name: "ArgumentParser", package: "swift-argument-parser")],
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
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
    ],
    targets: [
        .target(
            name: "Shared",
            dependencies: [
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "Ingest",
            dependencies: [
                "Shared",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "Worker",
            dependencies: [
                "Shared",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "DevSupport",
            dependencies: [
                "Shared",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "DevTool",
            dependencies: [
                "Shared", "DevSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        benchmarkProgram("QueueBenchmark", ["Shared", "DevSupport", .product(name: "PostgresNIO", package: "postgres-nio")]),
        benchmarkProgram("ApplyBenchmark", ["Shared", "DevSupport", .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "NIOFoundationCompat", package: "swift-nio")]),
        benchmarkProgram("ForwardBenchmark", ["Shared", .product(name: "Hummingbird", package: "hummingbird"), .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "PostgresNIO", package: "postgres-nio")]),
        benchmarkProgram("IngestLoad", ["DevSupport", .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "NIOCore", package: "swift-nio")]),
        benchmarkProgram("LatencyBenchmark", ["DevSupport", .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "NIOCore", package: "swift-nio")]),
        .target(
            name: "TestSupport",
            dependencies: [
                "Shared", "DevSupport",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SharedTests",
            dependencies: ["Shared", "TestSupport", "DevSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "IngestTests",
            dependencies: [
                "Ingest", "Shared", "TestSupport", "DevSupport",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WorkerTests",
            dependencies: [
                "Worker", "Ingest", "Shared", "TestSupport", "DevSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DeployTests",
            dependencies: [
                "TestSupport",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
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
            dependencies: ["Shared", "DevSupport", "CFuzzDriver"],
            path: "Fuzz/Sources/FuzzSupport",
            swiftSettings: swiftSettings))
    for name in ["FuzzStripeSignature", "FuzzCompactJWS", "FuzzX5CChain", "FuzzRequestBody"] {
        package.targets.append(
            .executableTarget(
                name: name,
                dependencies: ["Shared", "FuzzSupport", .product(name: "NIOCore", package: "swift-nio")],
                path: "Fuzz/Sources/\(name)",
                swiftSettings: swiftSettings))
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
            dependencies: ["Shared", "DevSupport", .product(name: "Benchmark", package: "benchmark"), .product(name: "NIOCore", package: "swift-nio")],
            path: "Benchmarks/VerificationBenchmarks",
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]))
}
