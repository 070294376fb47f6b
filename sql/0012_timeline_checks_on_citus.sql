-- The two timeline checks on a distributed store. Timeline entries are placed by their user, posts by their
-- owner, and the checks join them by post key: Citus cannot correlate such subqueries. One server plans the views
-- of 0007 in parallel, which any shape Citus can run loses (stop 32 measured +50 % for timeline_missing), so those
-- views stay, and these twins are what `check` reads when the store is distributed. Each lists the same rows as
-- its view (a test compares them on one server): the posts' keys and owners come through OFFSET 0 subqueries,
-- which Citus runs first and ships to the workers, and only in top-level EXISTS, NOT EXISTS and joins; whatever
-- else a row is compared with (the user, the follow list, the timeline) is placed with the row.

CREATE VIEW integrity_timeline_missing_distributed AS
    SELECT DISTINCT '/timeline/' || e.uid || '/' || e.post_key AS path
    FROM (SELECT u.uid, p.post_key
          FROM users u JOIN posts p ON p.owner_uid = u.uid
          WHERE NOT EXISTS (SELECT 1 FROM timeline t WHERE t.uid = u.uid AND t.post_key = p.post_key)
              AND NOT EXISTS (SELECT 1 FROM unmapped_values v
                              WHERE v.root = 'timeline' AND v.path[1] = u.uid AND v.path[2] = p.post_key)
          UNION ALL
          SELECT u.uid, p.post_key
          FROM users u JOIN following f ON f.uid = u.uid
              JOIN (SELECT owner_uid, post_key FROM posts OFFSET 0) p ON p.owner_uid = f.followee_uid
          WHERE NOT EXISTS (SELECT 1 FROM timeline t WHERE t.uid = u.uid AND t.post_key = p.post_key)
              AND NOT EXISTS (SELECT 1 FROM unmapped_values v
                              WHERE v.root = 'timeline' AND v.path[1] = u.uid AND v.path[2] = p.post_key)
          UNION ALL
          SELECT u.uid, p.post_key
          FROM users u
              JOIN (SELECT DISTINCT path[1] AS uid, path[2] AS followee_uid FROM unmapped_values
                    WHERE root = 'following' AND cardinality(path) >= 2
                        AND path[1] NOT IN ('.priority', '.value') AND path[2] NOT IN ('.priority', '.value')) f
                  ON f.uid = u.uid
              JOIN (SELECT owner_uid, post_key FROM posts OFFSET 0) p ON p.owner_uid = f.followee_uid
          WHERE NOT EXISTS (SELECT 1 FROM timeline t WHERE t.uid = u.uid AND t.post_key = p.post_key)
              AND NOT EXISTS (SELECT 1 FROM unmapped_values v
                              WHERE v.root = 'timeline' AND v.path[1] = u.uid AND v.path[2] = p.post_key)) e;

-- Entries of an existing post that name another poster than its owner; entries naming the owner whose user is
-- gone or does not follow the owner; entries kept as unmapped values (they name no poster) of an existing post.
-- The entries whose user may not see the poster are found first, joined with the user's row and follow lists
-- where they are placed, behind OFFSET 0 (a list of its own): Citus cannot estimate a shipped list's size, and
-- asked in one step it looped over the posts with an index scan of the timeline per post (20k users: 279 s
-- instead of 0.4 s). One server reads the same shape without the OFFSET 0 lists of posts (0013).
CREATE VIEW integrity_timeline_extra_distributed AS
    SELECT '/timeline/' || t.uid || '/' || t.post_key AS path
    FROM timeline t
    WHERE EXISTS (SELECT 1 FROM (SELECT post_key FROM posts OFFSET 0) p WHERE p.post_key = t.post_key)
        AND NOT EXISTS (SELECT 1 FROM (SELECT owner_uid, post_key FROM posts OFFSET 0) p
                        WHERE p.post_key = t.post_key AND p.owner_uid = t.poster_uid)
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
    WHERE EXISTS (SELECT 1 FROM (SELECT owner_uid, post_key FROM posts OFFSET 0) p
                  WHERE p.post_key = t.post_key AND p.owner_uid = t.poster_uid)
    UNION ALL
    SELECT DISTINCT '/timeline/' || v.path[1] || '/' || v.path[2]
    FROM unmapped_values v
    WHERE v.root = 'timeline' AND cardinality(v.path) >= 2
        AND v.path[1] NOT IN ('.priority', '.value') AND v.path[2] NOT IN ('.priority', '.value')
        AND EXISTS (SELECT 1 FROM (SELECT post_key FROM posts OFFSET 0) p WHERE p.post_key = v.path[2]);
