import FirebaseTree

/// How `Store.exportTree` writes the node: the JSON's form, how deep, and on how many sessions.
public struct ExportOptions: Sendable, Equatable {
    /// The JSON's form: indentation, arrays, priorities.
    public var format: JSONTextWriter.Options
    /// As the REST API's `shallow=true`: a leaf as it is, an object with each child's value replaced by `true`
    /// unless that child is a leaf.
    public var shallow: Bool
    /// How many sessions read the tables of a whole-tree export, sharing its snapshot (`pg_dump -j`'s way); nil
    /// for as many as the machine has cores. One reads everything on the store's own connection.
    public var jobs: Int?

    /// Options; the defaults write the whole node, compact, on one session per core.
    public init(format: JSONTextWriter.Options = .init(), shallow: Bool = false, jobs: Int? = nil) {
        self.format = format
        self.shallow = shallow
        self.jobs = jobs
    }
}
