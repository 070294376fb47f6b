-- orphans gets a Citus twin, as the timeline checks did (0012). Migration 0011 rewrote the view itself so that
-- Citus could plan it: the posts' and chats' keys came from subqueries with OFFSET 0. At 20k users that cost one
-- server 20 %; measured at scale it costs twice as much: `SELECT count(*)` 0.61–0.87 s against 0.27–0.32 s on
-- the 232 MB store and 3.55–3.75 s against 1.67–1.73 s at 1 GB, because OFFSET 0 keeps the anti-joins out of
-- parallel plans (BENCHMARKS.md). One server gets the plain view of 0007 back; a distributed store reads the
-- shape of 0011, which lists the same rows (a single-server test compares them).

CREATE OR REPLACE VIEW integrity_orphans_distributed AS
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
