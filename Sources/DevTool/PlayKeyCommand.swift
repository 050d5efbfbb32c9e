// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import DevSupport
import Foundation

/// `sluice-dev play-key`: a Google service account's JSON key file with a fresh RSA key, its
/// `token_uri` on the local Google stand-in that `sluice-dev e2e --google-port` serves.
struct PlayKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play-key", abstract: "Write a service account key file for the local Google Play stand-in.")

    @Option(help: "Where to write the key file (mode 0600).") var out: String
    @Option(help: "The stand-in's base URL; the key's token_uri is <URL>/token.") var googleURL: String

    func run() throws {
        try GooglePlayAPIStandIn().keyFile(base: googleURL).write(to: URL(fileURLWithPath: out))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: out)
        print(out)
    }
}
