// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import DevSupport
import Foundation

/// `sluice-dev fuzz-seeds --out Fuzz/Corpus`: writes the fuzz targets' seed corpus and the test root it is signed under.
struct FuzzSeedsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fuzz-seeds",
        abstract: "Write the seed corpus of the fuzz targets (one folder each) and trust/root.pem, the test root its Apple seeds chain to.")

    @Option(help: "The folder to write to (Fuzz/Corpus in the repository).")
    var out: String

    func run() async throws {
        try FuzzSeeds.write(to: URL(fileURLWithPath: out))
        print("wrote the fuzz seed corpus to \(out)")
    }
}
