-- Who holds a copy of each chat, placed by chat key beside the chat's messages (shared/distributed-postgres.md,
-- rule 21): /chats/{uid}/{chat_key} is placed by its holder, so "does this chat exist", which `orphans` asks of
-- every message, was a question to every shard. One row per copy of /chats, kept with it by every write in the same
-- transaction (imports, `chat send`, `chat merge`, the chats repair), never by a trigger; not part of the tree, never
-- exported.
CREATE TABLE chat_holders (
    chat_key  text COLLATE "C" NOT NULL,
    uid       text COLLATE "C" NOT NULL,
    PRIMARY KEY (chat_key, uid)
);
INSERT INTO chat_holders (chat_key, uid) SELECT chat_key, uid FROM chats;

-- A store distributed before. Nested IFs: an expression naming Citus's catalog is planned only where Citus is
-- installed.
DO $$
BEGIN
    IF to_regclass('pg_dist_partition') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'messages'::regclass) THEN
            PERFORM create_distributed_table('chat_holders', 'chat_key', colocate_with := 'messages');
        END IF;
    END IF;
END
$$;

-- Messages of missing chats: one server and Citus alike ask the holders, beside the messages.
CREATE OR REPLACE VIEW integrity_orphans AS
    SELECT '/postLikes/' || l.post_key || '/' || l.liker_uid AS path
    FROM post_likes l
    WHERE l.post_owner_uid = ''
    UNION ALL
    SELECT DISTINCT '/postLikes/' || v.path[1] || '/' || v.path[2]
    FROM unmapped_values v
    WHERE v.root = 'postLikes' AND cardinality(v.path) >= 2
        AND v.path[1] NOT IN ('.priority', '.value') AND v.path[2] NOT IN ('.priority', '.value')
        AND NOT EXISTS (SELECT FROM posts p WHERE p.post_key = v.path[1])
    UNION ALL
    SELECT '/messages/' || m.chat_key || '/' || m.message_key
    FROM messages m
    WHERE NOT EXISTS (SELECT 1 FROM chat_holders c WHERE c.chat_key = m.chat_key)
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

CREATE OR REPLACE VIEW integrity_orphans_distributed AS
    SELECT '/postLikes/' || l.post_key || '/' || l.liker_uid AS path
    FROM post_likes l
    WHERE l.post_owner_uid = ''
    UNION ALL
    SELECT DISTINCT '/postLikes/' || v.path[1] || '/' || v.path[2]
    FROM unmapped_values v
    WHERE v.root = 'postLikes' AND cardinality(v.path) >= 2
        AND v.path[1] NOT IN ('.priority', '.value') AND v.path[2] NOT IN ('.priority', '.value')
        AND NOT EXISTS (SELECT 1 FROM (SELECT post_key FROM posts OFFSET 0) p WHERE p.post_key = v.path[1])
    UNION ALL
    SELECT '/messages/' || m.chat_key || '/' || m.message_key
    FROM messages m
    WHERE NOT EXISTS (SELECT 1 FROM chat_holders c WHERE c.chat_key = m.chat_key)
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
