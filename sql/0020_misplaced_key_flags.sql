-- Whether byte order misplaces a table's key, answered from the key-order indexes alone (issue 42). A whole-tree
-- export asks it of every table before reading it in primary-key order: a walk of the table's partial index of
-- digit-led keys that fetched each row from the heap to test the key (1.2 s of server CPU per export of a 1.1 GB
-- store, 360-510 ms for /timeline). Each key-order index now ends with the answer for its row,
-- rtdb_key_misplaced of its keys, which the question's condition names verbatim: the btree tests it on its own
-- tuples (timeline 20-33 ms at 1.1 GB).
--
-- On Citus no shard used these indexes: the coordinator inlines the functions and sends their bodies as text,
-- and a body that let its parameter's collation flow into a function (length(k), k ~ ...) was resolved, when
-- created, with the parameter's default collation, while the text the worker parses takes the column's "C": the
-- trees differ, so no partial index predicate was proven and no index expression matched (each shard scanned
-- and sorted). The functions are rewritten with every use of k in "C", which gives the same results (the keys
-- are "C" columns; a key of another collation was compared in "C" already) and the same tree both ways.

-- An integer, or a key looking like one (digits and '-' only, and at most 11 characters unless it starts with '0' or
-- '-0', as integers with leading zeros do: longer ones, epoch milliseconds, are text in RTDB's order too), or a key
-- holding a character from U+E000 up: keys whose RTDB position byte order may get wrong. The length and ranges
-- come first so that most keys (uids, push IDs) are told apart without ltrim copying them.
CREATE FUNCTION rtdb_key_misplaced(k text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ((octet_length(k COLLATE "C") <= 11 OR (k COLLATE "C" >= '0' AND k COLLATE "C" < '1')
            OR (k COLLATE "C" >= '-0' AND k COLLATE "C" < '-1'))
            AND ltrim(k COLLATE "C", '-0123456789') = '')
        OR (octet_length(k COLLATE "C") <> length(k COLLATE "C") AND k COLLATE "C" ~ '[\uE000-\U0010FFFF]');

CREATE OR REPLACE FUNCTION rtdb_key_needs_order(k text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (k COLLATE "C" >= '0' AND k COLLATE "C" < ':') OR (k COLLATE "C" >= '-0' AND k COLLATE "C" < '-:')
        OR (octet_length(k COLLATE "C") <> length(k COLLATE "C") AND k COLLATE "C" ~ '[\uE000-\U0010FFFF]');

-- 0008's rtdb_key_order, every k in "C" (casts to bigint take none).
CREATE OR REPLACE FUNCTION rtdb_key_order(k text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN k COLLATE "C" = '.priority' THEN ''
        WHEN k COLLATE "C" >= '1' AND k COLLATE "C" < ':' AND ltrim(k COLLATE "C", '0123456789') = ''
             AND (length(k COLLATE "C") < 10 OR (length(k COLLATE "C") = 10 AND k COLLATE "C" <= '2147483647'))
            OR k COLLATE "C" = '0'
        THEN chr(2) || '1' || chr(48 + length(k COLLATE "C")) || k COLLATE "C"
        WHEN ((k COLLATE "C" >= '0' AND k COLLATE "C" < ':') OR (k COLLATE "C" >= '-0' AND k COLLATE "C" < '-:'))
             AND ltrim(k COLLATE "C", '-0123456789') = '' AND strpos(substr(k COLLATE "C", 2), '-') = 0
             AND length(ltrim(ltrim(k COLLATE "C", '-'), '0')) <= 10
        THEN CASE
            WHEN k::bigint BETWEEN 0 AND 2147483647
            THEN chr(2) || '1' || chr(48 + length(k::bigint::text)) || k::bigint::text
                || lpad(length(k COLLATE "C")::text, 4, '0') || k COLLATE "C"
            WHEN k::bigint BETWEEN -2147483648 AND -1
            THEN chr(2) || '0' || chr(58 - length((-k::bigint)::text))
                || translate((-k::bigint)::text, '0123456789', '9876543210')
                || lpad(length(k COLLATE "C")::text, 4, '0') || k COLLATE "C"
            ELSE chr(3) || k COLLATE "C"
        END
        WHEN octet_length(k COLLATE "C") = length(k COLLATE "C") THEN chr(3) || k COLLATE "C"
        ELSE chr(3) || regexp_replace(
            regexp_replace(k COLLATE "C", '([\uE000-\uFFFF])', chr(57345) || '\1', 'g'),
            '([\U00010000-\U0010FFFF])', chr(57344) || '\1', 'g')
    END;

-- Citus propagates CREATE INDEX by its statement's text, which for a migration is the whole file ("cannot insert
-- multiple commands into a prepared statement"), and drops one distributed object per command: each statement is
-- EXECUTEd on its own, as its own text.
DO $$
BEGIN
    EXECUTE $i$DROP INDEX users_key_order$i$;
    EXECUTE $i$DROP INDEX posts_key_order$i$;
    EXECUTE $i$DROP INDEX feed_posts_key_order$i$;
    EXECUTE $i$DROP INDEX post_likes_key_order$i$;
    EXECUTE $i$DROP INDEX followers_key_order$i$;
    EXECUTE $i$DROP INDEX following_key_order$i$;
    EXECUTE $i$DROP INDEX timeline_key_order$i$;
    EXECUTE $i$DROP INDEX chats_key_order$i$;
    EXECUTE $i$DROP INDEX messages_key_order$i$;
    EXECUTE $i$CREATE INDEX users_key_order ON users ((rtdb_key_order(uid) COLLATE "C"), (rtdb_key_misplaced(uid)))
        WHERE rtdb_key_needs_order(uid)$i$;
    EXECUTE $i$CREATE INDEX posts_key_order ON posts ((rtdb_key_order(owner_uid) COLLATE "C"),
        (rtdb_key_order(post_key) COLLATE "C"), (rtdb_key_misplaced(owner_uid) OR rtdb_key_misplaced(post_key)))
        WHERE rtdb_key_needs_order(owner_uid) OR rtdb_key_needs_order(post_key)$i$;
    EXECUTE $i$CREATE INDEX feed_posts_key_order ON feed_posts ((rtdb_key_order(post_id) COLLATE "C"),
        (rtdb_key_misplaced(post_id)))
        WHERE rtdb_key_needs_order(post_id)$i$;
    EXECUTE $i$CREATE INDEX post_likes_key_order ON post_likes ((rtdb_key_order(post_key) COLLATE "C"),
        (rtdb_key_order(liker_uid) COLLATE "C"), (rtdb_key_misplaced(post_key) OR rtdb_key_misplaced(liker_uid)))
        WHERE rtdb_key_needs_order(post_key) OR rtdb_key_needs_order(liker_uid)$i$;
    EXECUTE $i$CREATE INDEX followers_key_order ON followers ((rtdb_key_order(uid) COLLATE "C"),
        (rtdb_key_order(follower_uid) COLLATE "C"), (rtdb_key_misplaced(uid) OR rtdb_key_misplaced(follower_uid)))
        WHERE rtdb_key_needs_order(uid) OR rtdb_key_needs_order(follower_uid)$i$;
    EXECUTE $i$CREATE INDEX following_key_order ON following ((rtdb_key_order(uid) COLLATE "C"),
        (rtdb_key_order(followee_uid) COLLATE "C"), (rtdb_key_misplaced(uid) OR rtdb_key_misplaced(followee_uid)))
        WHERE rtdb_key_needs_order(uid) OR rtdb_key_needs_order(followee_uid)$i$;
    EXECUTE $i$CREATE INDEX timeline_key_order ON timeline ((rtdb_key_order(uid) COLLATE "C"),
        (rtdb_key_order(post_key) COLLATE "C"), (rtdb_key_misplaced(uid) OR rtdb_key_misplaced(post_key)))
        WHERE rtdb_key_needs_order(uid) OR rtdb_key_needs_order(post_key)$i$;
    EXECUTE $i$CREATE INDEX chats_key_order ON chats ((rtdb_key_order(uid) COLLATE "C"),
        (rtdb_key_order(chat_key) COLLATE "C"), (rtdb_key_misplaced(uid) OR rtdb_key_misplaced(chat_key)))
        WHERE rtdb_key_needs_order(uid) OR rtdb_key_needs_order(chat_key)$i$;
    EXECUTE $i$CREATE INDEX messages_key_order ON messages ((rtdb_key_order(chat_key) COLLATE "C"),
        (rtdb_key_order(message_key) COLLATE "C"), (rtdb_key_misplaced(chat_key) OR rtdb_key_misplaced(message_key)))
        WHERE rtdb_key_needs_order(chat_key) OR rtdb_key_needs_order(message_key)$i$;
END $$;
