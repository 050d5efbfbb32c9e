// SPDX-License-Identifier: Apache-2.0
import CFuzzDriver

/// Hands one fuzz target to libFuzzer. A target's `main.swift` defines its test as
/// `@_cdecl("LLVMFuzzerTestOneInput")` (the symbol libFuzzer's own `main` calls) and runs
/// `exit(FuzzDriver.run(thatFunction))`: SwiftPM links each executable's own `main`, so whichever
/// `main` the linker keeps, the same test runs with libFuzzer's options.
public enum FuzzDriver {
    public typealias Test = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

    public static func run(_ test: Test) -> Int32 {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        return withUnsafeMutablePointer(to: &argv) { argv in
            argv.withMemoryRebound(to: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?.self, capacity: 1) {
                LLVMFuzzerRunDriver(&argc, $0, test)
            }
        }
    }
}

extension UnsafeRawBufferPointer {
    /// The input libFuzzer passes (`data` may be null when `size` is zero).
    public init(fuzzInput data: UnsafePointer<UInt8>?, _ size: Int) {
        self.init(start: data, count: data == nil ? 0 : size)
    }
}
