-- Repairs with --batch-size run once per range of keys, committed one after the other. Each statement states its
-- range as key_in_range(column, low, high) with the bounds bound as parameters; NULL bounds leave that side open,
-- so the same statements run unbatched with both NULL. The function is inlined and, with the values known when
-- the statement is planned, folds to plain comparisons an index can serve (or to true).
CREATE FUNCTION key_in_range(key text, low text, high text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (low IS NULL OR key >= low) AND (high IS NULL OR key < high);
