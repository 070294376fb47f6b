import Foundation

/// How many sessions a long operation runs on unless told otherwise.
enum Sessions {
    /// One a core: a whole-tree import's loading sessions, an export's reading ones.
    static var perCore: Int { ProcessInfo.processInfo.activeProcessorCount }
}
