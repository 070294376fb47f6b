// Trees, keys and the JSON reader and writer are part of Storage's API (a store imports and exports them), so
// the console sees them through Storage alone.
@_exported import FirebaseTree
