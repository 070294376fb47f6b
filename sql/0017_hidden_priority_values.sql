-- A leaf with a priority is stored as two unmapped values, NODE/.value and NODE/.priority. Versions before this
-- one kept the .value row when a write went below such a leaf (the .priority stays, as the SDKs keep a replaced
-- leaf's priority): a node with a value and children, hidden like the leaves of migration 0016. The check
-- `hidden_values` now lists such .value rows too (by their own path, NODE/.value), and its repair deletes them.
ALTER VIEW integrity_hidden_values RENAME TO integrity_hidden_leaves;

CREATE VIEW integrity_hidden_values AS
    SELECT path FROM integrity_hidden_leaves
    UNION ALL
    -- A .value with an unmapped child of its node beside it (.priority aside). Few rows have a .value: each is
    -- asked of the primary key's (root, path) order.
    SELECT tree_path(v.root, v.path)
    FROM unmapped_values v
    WHERE v.path[cardinality(v.path)] = '.value' AND EXISTS (
        SELECT 1 FROM unmapped_values c
        WHERE c.root = v.root AND cardinality(c.path) >= cardinality(v.path)
            AND c.path[1:cardinality(v.path) - 1] = v.path[1:cardinality(v.path) - 1]
            AND c.path[cardinality(v.path)] NOT IN ('.value', '.priority'));
