-- How a child of /posts is stored is a property of the tree (issue 70): an AppCoda feed post (a `feed_posts` row)
-- when some child of it is a leaf, `.value` or an AppCoda field (imageFileURL, user, votes, timestamp); a Makestagram
-- owner's posts (a `posts` row per child) when every child is an object under another key. Versions before this
-- one decided by the first child in the file's order, so that one tree could be stored both ways, and a sync, which
-- reads in RTDB order, could not bring a node to its file. The check `posts_shape` lists the children of /posts
-- stored otherwise than their children say; its repair (`repair posts-shape`, `check --fix`) stores each again from
-- its own export. Writes that may change a node's shape (a write below /posts/ID, a sync, a merge) ask
-- `posts_misshapen` of the nodes they touched: a write below a node stores what it writes as if that were the
-- whole node, which may leave a feed post beside an owner's posts until the node is stored again.
--
-- A node's children, as they are stored: a feed post's typed fields (all AppCoda fields) and the keys of its
-- `extra`; an owner's posts (objects) by their keys; unmapped values below the node, a child each by path[2] (a leaf
-- when nothing is below it). A node holding `.value` is a leaf with a priority, neither shape.

CREATE FUNCTION posts_misshapen(ids text[]) RETURNS TABLE (post_id text)
    LANGUAGE sql STABLE
AS $$
    WITH feed_children AS MATERIALIZED (
        SELECT f.post_id AS id FROM feed_posts f
        WHERE (ids IS NULL OR f.post_id = ANY (ids))
            AND (num_nonnulls(f.image_file_url, f.user_name, f.votes, f.timestamp_ms) > 0
                 OR EXISTS (SELECT 1 FROM jsonb_each(CASE jsonb_typeof(f.extra) WHEN 'object' THEN f.extra END) e
                            WHERE e.key <> '.priority'
                                AND (jsonb_typeof(e.value) NOT IN ('object', 'array')
                                     OR e.key IN ('imageFileURL', 'user', 'votes', 'timestamp', '.value'))))
        UNION
        SELECT p.owner_uid FROM posts p
        WHERE (ids IS NULL OR p.owner_uid = ANY (ids)) AND p.post_key IN ('imageFileURL', 'user', 'votes', 'timestamp')
        UNION
        SELECT v.path[1] FROM unmapped_values v
        WHERE v.root = 'posts' AND cardinality(v.path) >= 2 AND (ids IS NULL OR v.path[1] = ANY (ids))
            AND v.path[2] <> '.priority'
            AND (cardinality(v.path) = 2 OR v.path[2] IN ('imageFileURL', 'user', 'votes', 'timestamp', '.value'))),
    leaves AS MATERIALIZED (
        SELECT v.path[1] AS id FROM unmapped_values v
        WHERE v.root = 'posts' AND cardinality(v.path) = 2 AND v.path[2] = '.value'
            AND (ids IS NULL OR v.path[1] = ANY (ids))),
    feed_rows AS MATERIALIZED (
        SELECT f.post_id AS id FROM feed_posts f WHERE ids IS NULL OR f.post_id = ANY (ids))
    (
        -- A child that makes a feed post, and no feed post stored.
        (SELECT id FROM feed_children EXCEPT SELECT id FROM feed_rows)
        UNION
        -- A feed post stored, and no child that makes one.
        (SELECT id FROM feed_rows EXCEPT SELECT id FROM feed_children)
        UNION
        -- Stored both ways: a feed post beside an owner's posts (a write inside the node stored its part apart).
        (SELECT id FROM feed_rows INTERSECT SELECT p.owner_uid FROM posts p WHERE ids IS NULL OR p.owner_uid = ANY (ids))
    )
    EXCEPT SELECT id FROM leaves
$$;

CREATE VIEW integrity_posts_shape AS
    SELECT tree_path('posts', ARRAY[post_id]) AS path FROM posts_misshapen(NULL);
