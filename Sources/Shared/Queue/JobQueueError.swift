// SPDX-License-Identifier: Apache-2.0

/// An error of the queue mechanism.
public struct JobQueueError: Error, CustomStringConvertible, Equatable {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String { case leaseLost = "lease_lost", noHandler = "no_handler" }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The job's lease expired and another worker owns it now; this worker's work must not commit.
        public static let leaseLost = Code(.leaseLost)
        /// No handler is registered for the job's kind.
        public static let noHandler = Code(.noHandler)

        public var description: String { value.rawValue }
    }

    public var code: Code
    public var jobID: Int64
    public var details: String?

    public init(code: Code, jobID: Int64, details: String? = nil) {
        self.code = code
        self.jobID = jobID
        self.details = details
    }

    public var description: String {
        "\(code) (job \(jobID))" + (details.map { ": \($0)" } ?? "")
    }
}
