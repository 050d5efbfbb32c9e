// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing
import TestSupport

/// `deploy/Dockerfile` (no Docker engine runs here to build it).
struct DockerfileTests {
    let dockerfile: String

    init() throws {
        dockerfile = try DeployFiles.text("deploy/Dockerfile")
    }

    /// The fingerprint the image build checks Apple's download against is the SHA-256 of the real
    /// Apple Root CA G3 in the test vectors, the certificate the real notifications verify with.
    @Test func pinnedAppleRootFingerprintIsTheRealCertificates() throws {
        let line = try #require(dockerfile.split(separator: "\n").first { $0.hasPrefix("ARG APPLE_ROOT_CA_G3_SHA256=") })
        let pinned = line.split(separator: "=")[1].lowercased()
        let certificate = try Data(contentsOf: Vectors.url("apple/real/AppleRootCA-G3.cer"))
        let actual = SHA256.hash(data: certificate).map { String(format: "%02x", $0) }.joined()
        #expect(pinned == actual)
        #expect(pinned == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        #expect(dockerfile.contains("sha256sum --check --strict"))
        #expect(dockerfile.contains("https://www.apple.com/certificateauthority/AppleRootCA-G3.cer"))
        #expect(dockerfile.contains("APPLE_ROOT_CERTIFICATES=/etc/sluice/AppleRootCA-G3.cer"))
    }

    @Test func buildsBothBinariesStaticallyAndRunsThemAsNonRoot() throws {
        #expect(dockerfile.contains("ARG SWIFT_IMAGE=docker.io/library/swift:6.3-"))
        #expect(dockerfile.contains("--static-swift-stdlib --product ingest"))
        #expect(dockerfile.contains("--static-swift-stdlib --product worker"))
        let stages = dockerfile.split(separator: "\n").filter { $0.hasPrefix("FROM ") }
        #expect(stages.count == 3, "build, apple-root, runtime")
        let runtime = try #require(dockerfile.components(separatedBy: "\nFROM ").last)
        #expect(runtime.contains("\nUSER 10001:10001"))
        #expect(runtime.contains("\nHEALTHCHECK "))
        #expect(runtime.contains("/healthz"))
        #expect(runtime.contains("MIGRATIONS_DIR=/usr/local/share/sluice/sql"))
        #expect(!runtime.contains("swift build"), "the runtime stage must not carry the toolchain")
    }

    @Test func buildContextLeavesOutBuildsAndSecrets() throws {
        let ignored = Set(try DeployFiles.text("deploy/Dockerfile.dockerignore").split(separator: "\n").map(String.init))
        #expect(ignored.isSuperset(of: [".build", ".build-*", ".git", "deploy/.env"]))
    }
}
