import Foundation
import Storage

/// SOURCE as verify and sync read it: once, and when its keys turn out not to be in RTDB order, again, twice at
/// once, to find the objects out of order and to compare with those sorted (or the whole source sorted, where they
/// are too many; stdin is kept in the temporary directory as it is read the first time, in case). The progress bar
/// starts over for the comparison, and the operator is told why.
final class ComparedInput {
    private let input: InputFile
    private let name: String
    private let command: String
    private let sortsFirst: Bool
    private let temporaryDirectory: String
    private let session: Session
    private var passes = 0
    /// The bar of the pass under way.
    private(set) var progress: ProgressBar?

    /// `input` (named `name` to the operator) read by `command`, sorted first when `sortsFirst`.
    init(
        _ input: InputFile, name: String, command: String, sortsFirst: Bool, temporaryDirectory: String,
        session: Session
    ) {
        self.input = input
        self.name = name
        self.command = command
        self.sortsFirst = sortsFirst
        self.temporaryDirectory = temporaryDirectory
        self.session = session
        progress = ProgressBar(command, total: input.size, session: session)
    }

    /// The source from its start: what the store's comparison calls for each pass. The second is the scan for
    /// the objects out of order, which reads beside the third (the comparison with them sorted) and shows no bar
    /// of its own.
    func open() throws -> any ByteSource {
        if sortsFirst { return try input.source(progress: progress) }
        passes += 1
        if passes == 1 { return try input.source(progress: progress, keepingCopyIn: temporaryDirectory) }
        if passes == 2 {
            session.inform(
                "\(name): keys not in RTDB order; sorting what is out of order (temporary files in \(temporaryDirectory))"
            )
            return try input.rewound()
        }
        progress?.finish()
        progress = ProgressBar("\(command): sorted", total: input.size, session: session)
        return try input.rewound(progress: progress)
    }
}
