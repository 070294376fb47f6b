-- timeline_extra on one server in three disjoint parts, the shape of its Citus twin (0012), with the same rows as
-- before: entries of an existing post that name another poster than every owner of its key; entries naming an
-- owner whose user is gone or does not follow that owner; entries kept as unmapped values (they name no poster)
-- of an existing post.
--
-- The view of 0007 asked whether the user follows the poster inside the anti-join with posts, which the planner
-- can only run as an index probe of /following per entry (1.37 M probes on the 232 MB store). Here the second
-- part joins the entries with users and the follow lists first (hash joins, in parallel: no correlated
-- subquery), behind OFFSET 0 so that the planner, which cannot estimate how few entries name their post's owner
-- and fail, does not turn those joins back into probes; the few entries left are then matched with the posts.
-- One server, `SELECT count(*)`: 3.0 → 0.8 s on the 232 MB store, 1.0 → 0.2 s at 20k users (BENCHMARKS.md). On
-- Citus the joins are on the user, with whom the entry, the user's row and the follow list are placed.

CREATE OR REPLACE VIEW integrity_timeline_extra AS
    SELECT '/timeline/' || t.uid || '/' || t.post_key AS path
    FROM timeline t
    WHERE EXISTS (SELECT FROM posts p WHERE p.post_key = t.post_key)
        AND NOT EXISTS (SELECT FROM posts p WHERE p.post_key = t.post_key AND p.owner_uid = t.poster_uid)
    UNION ALL
    SELECT '/timeline/' || t.uid || '/' || t.post_key
    FROM (SELECT t.uid, t.post_key, t.poster_uid
          FROM timeline t
              LEFT JOIN users u ON u.uid = t.uid
              LEFT JOIN following f ON f.uid = t.uid AND f.followee_uid = t.poster_uid
              LEFT JOIN (SELECT DISTINCT path[1] AS uid, path[2] AS followee_uid FROM unmapped_values
                         WHERE root = 'following' AND cardinality(path) >= 2) w
                  ON w.uid = t.uid AND w.followee_uid = t.poster_uid
          WHERE u.uid IS NULL OR (t.poster_uid <> t.uid AND f.uid IS NULL AND w.uid IS NULL)
          OFFSET 0) t
    WHERE EXISTS (SELECT FROM posts p WHERE p.post_key = t.post_key AND p.owner_uid = t.poster_uid)
    UNION ALL
    SELECT DISTINCT '/timeline/' || v.path[1] || '/' || v.path[2]
    FROM unmapped_values v
    WHERE v.root = 'timeline' AND cardinality(v.path) >= 2
        AND v.path[1] NOT IN ('.priority', '.value') AND v.path[2] NOT IN ('.priority', '.value')
        AND EXISTS (SELECT FROM posts p WHERE p.post_key = v.path[2]);
