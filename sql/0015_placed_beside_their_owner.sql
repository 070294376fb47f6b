-- Rows placed beside what they are compared with (shared/distributed-postgres.md, rules 1 and 21): likes carry
-- their post's owner, a lookup finds a post by its key, and a table of who holds each chat sits beside its
-- messages. A distributed store then counts likes beside their posts and asks one shard where it asked every one:
-- `like_count` and the likes and messages of `orphans` become co-located questions instead of a collection of
-- every like and chat key on the coordinator.
--
-- /postLikes/{key} names a post by its key alone, and a key is not unique across owners in real trees (numeric
-- per-user ids). A like is therefore stored once per owner of its key, and once with the owner '' (no Firebase
-- key is empty) while no post has that key: such a like is still data, exported as it was imported, and it is
-- exactly what `orphans` reports. The tree's like /postLikes/{key}/{liker} is the set of rows with that key and
-- liker; export writes it once. Which rows a like has is a function of /posts, kept so by every write in the
-- same transaction (the store's `settleLikeOwners`, `like`, post create and delete), never by a trigger. A lookup
-- of each post's key and owner (`post_keys`, below) serves the same writes on a distributed store.

-- The default is the owner of a like whose key has no post. It stays: Citus propagates ALTER COLUMN by the text
-- of the statement, which in a migration is the whole file, and refuses it ("cannot insert multiple commands into
-- a prepared statement"). Every write names the owner anyway.
ALTER TABLE post_likes ADD COLUMN post_owner_uid text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE post_likes DROP CONSTRAINT post_likes_pkey;

-- The posts' keys through OFFSET 0 subqueries: Citus runs them first, so a store distributed before this
-- migration moves too.
INSERT INTO post_likes (post_owner_uid, post_key, liker_uid)
    SELECT p.owner_uid, l.post_key, l.liker_uid
    FROM post_likes l JOIN (SELECT owner_uid, post_key FROM posts OFFSET 0) p ON p.post_key = l.post_key;
DELETE FROM post_likes
    WHERE post_owner_uid = '' AND post_key IN (SELECT post_key FROM posts OFFSET 0);

-- The key leads with the tree's order, not with the distribution column (which Citus wants in the key, not first):
-- export reads /postLikes in that order and every write finds likes by their post key, and one index instead of
-- two keeps an import's cost of this change at its staging (BENCHMARKS.md). Unnamed, for the same reason as the
-- default (Citus names it itself).
ALTER TABLE post_likes ADD PRIMARY KEY (post_key, liker_uid, post_owner_uid);

-- Each post's key and owner, kept with /posts by every write (`settleLookup`, post create and delete): the
-- app names a post by its key alone (/postLikes/{key}, `like`), and on Citus this table, placed by key, answers
-- "whose post is this" from one shard where posts would ask every shard (rule 1 of shared/distributed-postgres.md).
-- Not part of the tree: never exported.
CREATE TABLE post_keys (
    post_key   text COLLATE "C" NOT NULL,
    owner_uid  text COLLATE "C" NOT NULL,
    PRIMARY KEY (post_key, owner_uid)
);
INSERT INTO post_keys (post_key, owner_uid) SELECT post_key, owner_uid FROM posts;

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

-- A store distributed before: likes move from their own group (by post key) into the users' group, the post-key
-- lookup joins the feed's group (by post key) and the chat holders the messages' (by chat key). Nested IFs: an
-- expression naming Citus's catalog is planned only where Citus is installed.
DO $$
BEGIN
    IF to_regclass('pg_dist_partition') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'post_likes'::regclass) THEN
            PERFORM alter_distributed_table('post_likes', distribution_column := 'post_owner_uid',
                                            colocate_with := 'users');
            PERFORM create_distributed_table('post_keys', 'post_key', colocate_with := 'feed_posts');
            PERFORM create_distributed_table('chat_holders', 'chat_key', colocate_with := 'messages');
        END IF;
    END IF;
END
$$;

CREATE OR REPLACE VIEW integrity_like_count AS
    SELECT '/posts/' || p.owner_uid || '/' || p.post_key AS path
    FROM posts p
    LEFT JOIN (SELECT post_owner_uid, post_key, count(*) AS likes FROM post_likes GROUP BY 1, 2) l
        ON l.post_owner_uid = p.owner_uid AND l.post_key = p.post_key
    LEFT JOIN (SELECT path[1] AS post_key, count(DISTINCT path[2]) AS likes FROM unmapped_values
               WHERE root = 'postLikes' AND cardinality(path) >= 2
                   AND path[1] NOT IN ('.priority', '.value') AND path[2] NOT IN ('.priority', '.value')
               GROUP BY 1) x ON x.post_key = p.post_key
    WHERE p.like_count IS DISTINCT FROM coalesce(l.likes, 0) + coalesce(x.likes, 0);

-- Every child of /postLikes/{key}, once: a typed like has a row per owner of its key.
CREATE OR REPLACE VIEW tree_post_likes AS
    SELECT post_key, liker_uid FROM post_likes WHERE post_owner_uid = ''
    UNION ALL
    SELECT DISTINCT post_key, liker_uid FROM post_likes WHERE post_owner_uid <> ''
    UNION ALL
    SELECT DISTINCT path[1], path[2] FROM unmapped_values
    WHERE root = 'postLikes' AND cardinality(path) >= 2
        AND path[1] NOT IN ('.priority', '.value') AND path[2] NOT IN ('.priority', '.value');

-- Orphan likes are those with the owner ''; messages of missing chats are asked of the holders, beside the
-- messages, on one server and Citus alike.
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
