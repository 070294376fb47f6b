-- The Citus twins of the timeline checks (0012) ship the posts to every timeline shard, each of which reads and
-- hashes or sorts every row shipped: at 32 shards, 50,000 posts were read 32 times over for each list, and
-- timeline_extra's first branch shipped two lists (keys, then keys with owners). Now that branch gets one list,
-- a row a key with its owner (an array of owners only where several share the key), and timeline_missing's
-- follow branches a row an owner with the owner's keys, grouped on the posts' shards (a quarter of the rows).
-- 20,000 users at 32 shards: `SELECT count(*)` of timeline_missing 1.91 -> 1.23 s, of timeline_extra 2.29 ->
-- 1.25 s (BENCHMARKS.md). They list the same rows as before, and as the one-server views, which stay.

CREATE OR REPLACE VIEW integrity_timeline_missing_distributed AS
    SELECT DISTINCT '/timeline/' || e.uid || '/' || e.post_key AS path
    FROM (SELECT u.uid, p.post_key
          FROM users u JOIN posts p ON p.owner_uid = u.uid
          WHERE NOT EXISTS (SELECT 1 FROM timeline t WHERE t.uid = u.uid AND t.post_key = p.post_key)
              AND NOT EXISTS (SELECT 1 FROM unmapped_values v
                              WHERE v.root = 'timeline' AND v.path[1] = u.uid AND v.path[2] = p.post_key)
          UNION ALL
          SELECT u.uid, k.post_key
          FROM users u JOIN following f ON f.uid = u.uid
              JOIN (SELECT owner_uid, array_agg(post_key) AS keys FROM posts GROUP BY owner_uid OFFSET 0) o
                  ON o.owner_uid = f.followee_uid
              CROSS JOIN LATERAL unnest(o.keys) AS k(post_key)
          WHERE NOT EXISTS (SELECT 1 FROM timeline t WHERE t.uid = u.uid AND t.post_key = k.post_key)
              AND NOT EXISTS (SELECT 1 FROM unmapped_values v
                              WHERE v.root = 'timeline' AND v.path[1] = u.uid AND v.path[2] = k.post_key)
          UNION ALL
          SELECT u.uid, k.post_key
          FROM users u
              JOIN (SELECT DISTINCT path[1] AS uid, path[2] AS followee_uid FROM unmapped_values
                    WHERE root = 'following' AND cardinality(path) >= 2
                        AND path[1] NOT IN ('.priority', '.value') AND path[2] NOT IN ('.priority', '.value')) f
                  ON f.uid = u.uid
              JOIN (SELECT owner_uid, array_agg(post_key) AS keys FROM posts GROUP BY owner_uid OFFSET 0) o
                  ON o.owner_uid = f.followee_uid
              CROSS JOIN LATERAL unnest(o.keys) AS k(post_key)
          WHERE NOT EXISTS (SELECT 1 FROM timeline t WHERE t.uid = u.uid AND t.post_key = k.post_key)
              AND NOT EXISTS (SELECT 1 FROM unmapped_values v
                              WHERE v.root = 'timeline' AND v.path[1] = u.uid AND v.path[2] = k.post_key)) e;

-- An entry whose poster is NULL names no owner: the coalesce keeps it listed, as NOT EXISTS did.
CREATE OR REPLACE VIEW integrity_timeline_extra_distributed AS
    SELECT '/timeline/' || t.uid || '/' || t.post_key AS path
    FROM timeline t
    WHERE EXISTS (
        SELECT 1
        FROM (SELECT post_key, min(owner_uid) AS owner,
                  CASE WHEN count(*) > 1 THEN array_agg(owner_uid) END AS owners
              FROM posts GROUP BY post_key OFFSET 0) p
        WHERE p.post_key = t.post_key
            AND NOT coalesce(t.poster_uid = p.owner OR t.poster_uid = ANY (p.owners), false))
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
