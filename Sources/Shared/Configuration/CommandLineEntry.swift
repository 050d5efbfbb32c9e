// SPDX-License-Identifier: Apache-2.0
public import ArgumentParser
import Foundation

/// Runs a command-line tool with Sluice's exit codes: `0` success, `1` failure with a one-line
/// reason on standard error, `2` bad usage (ArgumentParser alone would exit 64).
public enum CommandLineEntry {
    public static func main<Command: AsyncParsableCommand>(_ command: Command.Type, name: String) async -> Never {
        var parsed: any ParsableCommand
        do {
            parsed = try Command.parseAsRoot()
        } catch {
            let code = Command.exitCode(for: error)
            if code == .success {
                print(Command.fullMessage(for: error))
                exit(0)
            }
            FileHandle.standardError.write(Data((Command.fullMessage(for: error) + "\n").utf8))
            exit(2)
        }
        do {
            if var asyncCommand = parsed as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try parsed.run()
            }
            exit(0)
        } catch let exitCode as ExitCode {
            exit(exitCode.rawValue)
        } catch {
            // `--help` and usage errors of subcommands surface here, thrown by ArgumentParser's own commands.
            switch Command.exitCode(for: error) {
            case .success:
                print(Command.fullMessage(for: error))
                exit(0)
            case .validationFailure:
                FileHandle.standardError.write(Data((Command.fullMessage(for: error) + "\n").utf8))
                exit(2)
            default:
                break
            }
            let line = "\(error)".replacingOccurrences(of: "\n", with: " ")
            FileHandle.standardError.write(Data("\(name): \(line)\n".utf8))
            exit(1)
        }
    }
}

/// A failure that the command reports as one line and exit code 1.
public struct CommandFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
