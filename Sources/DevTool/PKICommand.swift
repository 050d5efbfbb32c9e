// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import DevSupport
import Foundation

/// `sluice-dev pki --out DIR`: makes a development root, intermediate and leaf with Apple's marker OIDs.
struct PKICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pki",
        abstract: "Write a development Apple-like PKI (root.pem, intermediate.pem, leaf.pem, leaf-key.pem) once.",
        discussion: "Trust root.pem only in a local run (APPLE_ROOT_CERTIFICATES); never in production.")

    @Option(help: "The folder to write to.")
    var out: String

    @Flag(help: "Replace a PKI that is already there.")
    var force = false

    func run() async throws {
        let folder = URL(fileURLWithPath: out)
        if !force, FileManager.default.fileExists(atPath: folder.appendingPathComponent("root.pem").path) {
            print("kept the development PKI in \(out)")
            return
        }
        try ApplePKI.generate(name: "Sluice Development").write(to: folder)
        print("wrote a development PKI to \(out)")
    }
}
