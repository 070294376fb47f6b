-- Two checks that Citus could not plan, in shapes that run on one server and on Citus with the same rows.
--
-- orphans: a correlated NOT EXISTS between tables distributed by different columns (likes and timeline entries
-- against posts, by post key; messages against chats, by chat key) is a join Citus cannot push down. The keys
-- now come from a subquery with OFFSET 0, which Citus cannot push down either, so it runs it first and sends
-- its rows to the workers as an intermediate result; one server plans the same hash anti-joins as before.
-- Measured at 20k users (BENCHMARKS.md "Citus"): 50 ms before, 60 ms after on one server; the OFFSET keeps
-- the posts' scan out of a parallel plan.
--
-- chat_hash_legacy: a correlated EXISTS over the chat_members view (a GROUP BY) is a subquery Citus cannot
-- correlate. The copies' hashes are now aggregated with the members, in one pass over the chats: every copy
-- holds the stable hash exactly when all copies hold a hash, the smallest and the largest are equal, and that
-- one is the stable hash of the two members.

CREATE OR REPLACE VIEW integrity_orphans AS
    SELECT '/postLikes/' || l.post_key || '/' || l.liker_uid AS path
    FROM post_likes l
    WHERE NOT EXISTS (SELECT 1 FROM (SELECT post_key FROM posts OFFSET 0) p WHERE p.post_key = l.post_key)
    UNION ALL
    SELECT DISTINCT '/postLikes/' || v.path[1] || '/' || v.path[2]
    FROM unmapped_values v
    WHERE v.root = 'postLikes' AND cardinality(v.path) >= 2
        AND v.path[1] NOT IN ('.priority', '.value') AND v.path[2] NOT IN ('.priority', '.value')
        AND NOT EXISTS (SELECT 1 FROM (SELECT post_key FROM posts OFFSET 0) p WHERE p.post_key = v.path[1])
    UNION ALL
    SELECT '/messages/' || m.chat_key || '/' || m.message_key
    FROM messages m
    WHERE NOT EXISTS (SELECT 1 FROM (SELECT chat_key FROM chats OFFSET 0) c WHERE c.chat_key = m.chat_key)
    UNION ALL
    SELECT '/timeline/' || t.uid || '/' || t.post_key
    FROM timeline t
    WHERE NOT EXISTS (SELECT 1 FROM (SELECT post_key FROM posts OFFSET 0) p WHERE p.post_key = t.post_key)
    UNION ALL
    SELECT DISTINCT '/timeline/' || v.path[1] || '/' || v.path[2]
    FROM unmapped_values v
    WHERE v.root = 'timeline' AND cardinality(v.path) >= 2
        AND v.path[1] NOT IN ('.priority', '.value') AND v.path[2] NOT IN ('.priority', '.value')
        AND NOT EXISTS (SELECT 1 FROM (SELECT post_key FROM posts OFFSET 0) p WHERE p.post_key = v.path[2]);

CREATE OR REPLACE VIEW integrity_chat_hash_legacy AS
    SELECT '/chats/' || h.holders[1] || '/' || h.chat_key AS path
    FROM (SELECT c.chat_key,
              array_agg(DISTINCT c.uid ORDER BY c.uid) AS holders,
              coalesce(array_agg(DISTINCT m.uid COLLATE "C" ORDER BY m.uid COLLATE "C") FILTER (WHERE m.uid IS NOT NULL),
                       '{}') AS members,
              count(DISTINCT c.uid) AS copies,
              count(DISTINCT c.uid) FILTER (WHERE c.member_hash IS NOT NULL) AS hashed,
              min(c.member_hash) AS lowest, max(c.member_hash) AS highest
          FROM chats c
          LEFT JOIN LATERAL unnest(c.members) AS m(uid) ON true
          GROUP BY c.chat_key) h
    WHERE cardinality(h.members) = 2
        AND (h.hashed < h.copies OR h.lowest <> h.highest
             OR h.lowest <> chat_member_hash(h.members[1], h.members[2]));
