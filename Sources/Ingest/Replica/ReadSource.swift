// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// Where the read API reads: the primary, or a replica while ``ReplicaLag`` allows it.
enum ReadSource: Sendable {
    case primary(StateReader)
    case replica(ReplicaLag)

    var reader: StateReader {
        switch self {
        case .primary(let reader): reader
        case .replica(let lag): lag.reader()
        }
    }
}
