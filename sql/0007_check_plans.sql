-- Three checks read the tree_* views (typed rows UNION ALL unmapped values) where a typed table is large. On a
-- store of 2.3M posts the planner then guessed 200 groups for the likes per post and spilled, ran an anti-join
-- over a subquery scan of the union, and deduplicated 19M expected timeline entries before looking for the few
-- that are missing. The typed table and the unmapped values are now asked apart, and the missing entries are
-- deduplicated after the anti-join. The violations are the same; shared post keys (which push IDs rule out)
-- now count a missing (uid, key) pair once, as the check is defined.

CREATE OR REPLACE VIEW integrity_like_count AS
    SELECT '/posts/' || p.owner_uid || '/' || p.post_key AS path
    FROM posts p
    LEFT JOIN (SELECT post_key, count(*) AS likes FROM post_likes GROUP BY post_key) l ON l.post_key = p.post_key
    LEFT JOIN (SELECT path[1] AS post_key, count(DISTINCT path[2]) AS likes FROM unmapped_values
               WHERE root = 'postLikes' AND cardinality(path) >= 2
                   AND path[1] NOT IN ('.priority', '.value') AND path[2] NOT IN ('.priority', '.value')
               GROUP BY 1) x ON x.post_key = p.post_key
    WHERE p.like_count IS DISTINCT FROM coalesce(l.likes, 0) + coalesce(x.likes, 0);

CREATE OR REPLACE VIEW integrity_timeline_missing AS
    SELECT DISTINCT '/timeline/' || e.uid || '/' || e.post_key AS path
    FROM (SELECT u.uid, p.post_key FROM users u JOIN posts p ON p.owner_uid = u.uid
          UNION ALL
          SELECT u.uid, p.post_key
          FROM users u JOIN tree_following f ON f.uid = u.uid JOIN posts p ON p.owner_uid = f.followee_uid) e
    WHERE NOT EXISTS (SELECT FROM timeline t WHERE t.uid = e.uid AND t.post_key = e.post_key)
        AND NOT EXISTS (SELECT FROM unmapped_values v
                        WHERE v.root = 'timeline' AND v.path[1] = e.uid AND v.path[2] = e.post_key);

CREATE OR REPLACE VIEW integrity_orphans AS
    SELECT '/postLikes/' || l.post_key || '/' || l.liker_uid AS path
    FROM post_likes l
    WHERE NOT EXISTS (SELECT FROM posts p WHERE p.post_key = l.post_key)
    UNION ALL
    SELECT DISTINCT '/postLikes/' || v.path[1] || '/' || v.path[2]
    FROM unmapped_values v
    WHERE v.root = 'postLikes' AND cardinality(v.path) >= 2
        AND v.path[1] NOT IN ('.priority', '.value') AND v.path[2] NOT IN ('.priority', '.value')
        AND NOT EXISTS (SELECT FROM posts p WHERE p.post_key = v.path[1])
    UNION ALL
    SELECT '/messages/' || m.chat_key || '/' || m.message_key
    FROM messages m
    WHERE NOT EXISTS (SELECT FROM chats c WHERE c.chat_key = m.chat_key)
    UNION ALL
    SELECT '/timeline/' || t.uid || '/' || t.post_key
    FROM timeline t
    WHERE NOT EXISTS (SELECT FROM posts p WHERE p.post_key = t.post_key)
    UNION ALL
    SELECT DISTINCT '/timeline/' || v.path[1] || '/' || v.path[2]
    FROM unmapped_values v
    WHERE v.root = 'timeline' AND cardinality(v.path) >= 2
        AND v.path[1] NOT IN ('.priority', '.value') AND v.path[2] NOT IN ('.priority', '.value')
        AND NOT EXISTS (SELECT FROM posts p WHERE p.post_key = v.path[2]);


-- As the timeline repair's delete: one NOT EXISTS holding every condition, with the poster compared by IS NOT
-- DISTINCT FROM, so that the planner hash-anti-joins the entries with posts on the key alone instead of running
-- a subplan per entry.
CREATE OR REPLACE VIEW integrity_timeline_extra AS
    SELECT '/timeline/' || t.uid || '/' || t.post_key AS path
    FROM tree_timeline t
    WHERE EXISTS (SELECT FROM posts p WHERE p.post_key = t.post_key)
        AND NOT EXISTS (
            SELECT FROM posts p
            WHERE p.post_key = t.post_key AND p.owner_uid IS NOT DISTINCT FROM t.poster_uid
                AND EXISTS (SELECT FROM users u WHERE u.uid = t.uid)
                AND (p.owner_uid = t.uid
                     OR EXISTS (SELECT FROM following f WHERE f.uid = t.uid AND f.followee_uid = p.owner_uid)
                     OR EXISTS (SELECT FROM unmapped_values v
                                WHERE v.root = 'following' AND v.path[1] = t.uid AND v.path[2] = p.owner_uid)));
