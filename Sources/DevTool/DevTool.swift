// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Shared

/// `sluice-dev`: local development helpers — a development Apple PKI and signed sample events.
///
/// Nothing here is used in production; `scripts/dev` and `scripts/send-sample` call it.
@main
struct DevTool: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sluice-dev",
        abstract: "Development helpers: make a local Apple-like PKI, send signed sample events, run the end-to-end check.",
        subcommands: [PKICommand.self, SendCommand.self, EndToEndCommand.self, FuzzSeedsCommand.self, PlayKeyCommand.self])

    static func main() async {
        await CommandLineEntry.main(DevTool.self, name: "sluice-dev")
    }
}
