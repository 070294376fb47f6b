-- The integrity checks of `admin check`, as views: one row per violation, with the Firebase path an operator
-- looks at. Being views, they are versioned with the schema, and an operator (or a role that may only SELECT)
-- can query them from psql as the console does: SELECT path FROM integrity_like_count.
--
-- The checks are defined on the Firebase tree, so "a child of /postLikes/{key}" is any child there, not only
-- the `true` likes that have typed rows: a child holding anything else lives in unmapped_values. The tree_*
-- views below give those nodes back as rows.

-- The stable member hash of a two-person chat, which replaces the app's per-launch-seeded hashValue: the two
-- uids as UTF-8 ordered byte-wise (lo, hi), 64-bit FNV-1a over lo || 0x00 || hi, as a signed decimal. bigint
-- arithmetic raises on overflow, so the 64-bit state is kept as two 32-bit halves and the multiplication by
-- the FNV prime (2^40 + 0x1b3) is done on them: every intermediate stays below 2^42.
CREATE FUNCTION chat_member_hash(a text, b text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    x bytea := convert_to(a, 'UTF8');
    y bytea := convert_to(b, 'UTF8');
    input bytea;
    hi bigint := 3421674724;  -- 0xcbf29ce4, the offset basis's high half
    lo bigint := 2216829733;  -- 0x84222325
    product bigint;
BEGIN
    input := CASE WHEN x <= y THEN x || '\x00'::bytea || y ELSE y || '\x00'::bytea || x END;
    FOR i IN 0 .. length(input) - 1 LOOP
        lo := lo # get_byte(input, i);
        product := lo * 435;  -- 0x1b3
        hi := (hi * 435 + (product >> 32) + ((lo & 16777215) << 8)) & 4294967295;
        lo := product & 4294967295;
    END LOOP;
    RETURN ((CASE WHEN hi >= 2147483648 THEN hi - 4294967296 ELSE hi END) * 4294967296 + lo)::text;
END
$$;

-- `extra` without `field` (or, with `subfields`, without those keys of the object `field`), NULL when nothing
-- is left. Repairs use it when they set a typed column, since `extra` is merged over the typed fields on
-- export and a stale copy of the field there would win.
CREATE FUNCTION extra_without(extra jsonb, field text, subfields text[] DEFAULT NULL) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN nullif(CASE
        WHEN subfields IS NULL OR jsonb_typeof(extra -> field) IS DISTINCT FROM 'object' THEN extra - field
        WHEN (extra -> field) - subfields = '{}' THEN extra - field
        ELSE jsonb_set(extra, ARRAY[field], (extra -> field) - subfields)
    END, '{}');

-- Every child of /postLikes/{post_key}: the typed `true` likes and the children holding anything else.
CREATE VIEW tree_post_likes AS
    SELECT post_key, liker_uid FROM post_likes
    UNION ALL
    SELECT DISTINCT path[1], path[2] FROM unmapped_values
    WHERE root = 'postLikes' AND cardinality(path) >= 2
        AND path[1] NOT IN ('.priority', '.value') AND path[2] NOT IN ('.priority', '.value');

-- Every child of /following/{uid}.
CREATE VIEW tree_following AS
    SELECT uid, followee_uid FROM following
    UNION ALL
    SELECT DISTINCT path[1], path[2] FROM unmapped_values
    WHERE root = 'following' AND cardinality(path) >= 2
        AND path[1] NOT IN ('.priority', '.value') AND path[2] NOT IN ('.priority', '.value');

-- Every child of /followers/{uid}.
CREATE VIEW tree_followers AS
    SELECT uid, follower_uid FROM followers
    UNION ALL
    SELECT DISTINCT path[1], path[2] FROM unmapped_values
    WHERE root = 'followers' AND cardinality(path) >= 2
        AND path[1] NOT IN ('.priority', '.value') AND path[2] NOT IN ('.priority', '.value');

-- Every child of /timeline/{uid}; poster_uid is NULL for entries that are not objects.
CREATE VIEW tree_timeline AS
    SELECT uid, post_key, poster_uid FROM timeline
    UNION ALL
    SELECT DISTINCT path[1], path[2], NULL::text COLLATE "C" FROM unmapped_values
    WHERE root = 'timeline' AND cardinality(path) >= 2
        AND path[1] NOT IN ('.priority', '.value') AND path[2] NOT IN ('.priority', '.value');

-- One row per chat key: its copies' holders, and the union of the copies' members, both sorted byte-wise.
CREATE VIEW chat_members AS
    SELECT c.chat_key,
        array_agg(DISTINCT c.uid ORDER BY c.uid) AS holders,
        coalesce(array_agg(DISTINCT m.uid COLLATE "C" ORDER BY m.uid COLLATE "C") FILTER (WHERE m.uid IS NOT NULL),
                 '{}') AS members
    FROM chats c
    LEFT JOIN LATERAL unnest(c.members) AS m(uid) ON true
    GROUP BY c.chat_key;

-- A chat's newest message: the greatest timestamp, then the greatest key.
CREATE VIEW chat_newest_messages AS
    SELECT DISTINCT ON (chat_key) chat_key, message_key, content, "timestamp", sender_uid, sender_username
    FROM messages
    ORDER BY chat_key, "timestamp" DESC NULLS LAST, message_key DESC;

CREATE VIEW integrity_like_count AS
    SELECT '/posts/' || p.owner_uid || '/' || p.post_key AS path
    FROM posts p
    LEFT JOIN (SELECT post_key, count(*) AS likes FROM tree_post_likes GROUP BY post_key) l USING (post_key)
    WHERE p.like_count IS DISTINCT FROM coalesce(l.likes, 0);

CREATE VIEW integrity_poster AS
    SELECT '/posts/' || p.owner_uid || '/' || p.post_key AS path
    FROM posts p
    LEFT JOIN users u ON u.uid = p.owner_uid
    WHERE p.poster_uid IS DISTINCT FROM p.owner_uid OR p.poster_username IS DISTINCT FROM u.username;

-- The timeline entries the app should have written: (u, key) for u in /users and a post by u or a followee.
CREATE VIEW expected_timeline AS
    SELECT u.uid, p.post_key, p.owner_uid AS poster_uid
    FROM users u JOIN posts p ON p.owner_uid = u.uid
    UNION
    SELECT u.uid, p.post_key, p.owner_uid
    FROM users u JOIN tree_following f ON f.uid = u.uid JOIN posts p ON p.owner_uid = f.followee_uid;

-- (A post key that two owners share would be listed twice; push IDs make that practically impossible.)
CREATE VIEW integrity_timeline_missing AS
    SELECT '/timeline/' || e.uid || '/' || e.post_key AS path
    FROM expected_timeline e
    WHERE NOT EXISTS (SELECT FROM tree_timeline t WHERE t.uid = e.uid AND t.post_key = e.post_key);

CREATE VIEW integrity_timeline_extra AS
    SELECT '/timeline/' || t.uid || '/' || t.post_key AS path
    FROM tree_timeline t
    WHERE EXISTS (SELECT FROM posts p WHERE p.post_key = t.post_key)
        AND (NOT EXISTS (SELECT FROM users u WHERE u.uid = t.uid)
             OR NOT EXISTS (
                 SELECT FROM posts p
                 WHERE p.post_key = t.post_key AND p.owner_uid = t.poster_uid
                     AND (p.owner_uid = t.uid OR EXISTS (
                         SELECT FROM tree_following f WHERE f.uid = t.uid AND f.followee_uid = p.owner_uid))));

CREATE VIEW integrity_follow_asymmetric AS
    SELECT coalesce('/following/' || f.uid || '/' || f.followee_uid,
                    '/followers/' || r.uid || '/' || r.follower_uid) AS path
    FROM tree_following f
    FULL JOIN tree_followers r ON r.uid = f.followee_uid AND r.follower_uid = f.uid
    WHERE f.uid IS NULL OR r.uid IS NULL;

-- Chat-level violations are shown at the path of the chat's first copy.
CREATE VIEW integrity_chat_copies AS
    SELECT '/chats/' || m.holders[1] || '/' || m.chat_key AS path
    FROM chat_members m
    JOIN (SELECT chat_key,
              count(DISTINCT title) > 1 OR count(title) NOT IN (0, count(*))
              OR count(DISTINCT members) > 1 OR count(members) NOT IN (0, count(*))
              OR count(DISTINCT last_message) > 1 OR count(last_message) NOT IN (0, count(*))
              OR count(DISTINCT last_message_sent) > 1 OR count(last_message_sent) NOT IN (0, count(*))
                  AS fields_differ
          FROM chats GROUP BY chat_key) c USING (chat_key)
    WHERE c.fields_differ OR m.holders <> m.members;

CREATE VIEW integrity_chat_member_hash AS
    SELECT '/chats/' || min(uid) || '/' || chat_key AS path
    FROM chats
    GROUP BY chat_key
    HAVING count(DISTINCT member_hash) > 1 OR count(member_hash) NOT IN (0, count(*));

-- The stable hash is computed once per chat (OFFSET 0 keeps the planner from moving it into the EXISTS).
CREATE VIEW integrity_chat_hash_legacy AS
    SELECT '/chats/' || m.holders[1] || '/' || m.chat_key AS path
    FROM (SELECT chat_key, holders, chat_member_hash(members[1], members[2]) AS stable_hash
          FROM chat_members WHERE cardinality(members) = 2 OFFSET 0) m
    WHERE EXISTS (SELECT FROM chats c WHERE c.chat_key = m.chat_key AND c.member_hash IS DISTINCT FROM m.stable_hash);

-- One violation per pair of users, shown at the newest of the pair's chats under its first member.
CREATE VIEW integrity_chat_duplicates AS
    SELECT '/chats/' || members[1] || '/' || max(chat_key) AS path
    FROM chat_members
    WHERE cardinality(members) = 2
    GROUP BY members
    HAVING count(*) > 1;

CREATE VIEW integrity_chat_last_message AS
    SELECT '/chats/' || min(c.uid) || '/' || c.chat_key AS path
    FROM chats c
    JOIN chat_newest_messages n USING (chat_key)
    GROUP BY c.chat_key
    HAVING bool_or(c.last_message IS DISTINCT FROM n.sender_username || ': ' || n.content
                   OR c.last_message_sent IS DISTINCT FROM n."timestamp");

CREATE VIEW integrity_orphans AS
    SELECT '/postLikes/' || l.post_key || '/' || l.liker_uid AS path
    FROM tree_post_likes l
    WHERE NOT EXISTS (SELECT FROM posts p WHERE p.post_key = l.post_key)
    UNION ALL
    SELECT '/messages/' || m.chat_key || '/' || m.message_key
    FROM messages m
    WHERE NOT EXISTS (SELECT FROM chats c WHERE c.chat_key = m.chat_key)
    UNION ALL
    SELECT '/timeline/' || t.uid || '/' || t.post_key
    FROM tree_timeline t
    WHERE NOT EXISTS (SELECT FROM posts p WHERE p.post_key = t.post_key);
