-- Exports must list children in RTDB's key order: keys that are 32-bit integers first (numerically), then the
-- rest by UTF-16 code units. For keys that are neither digit-led nor non-ASCII that is plain byte order, which the
-- "C"-collated primary keys already give, so an export reads every table in index order. These functions and
-- partial indexes let it ask, without a scan, whether a table holds a key that may sort differently, and sort
-- by the exact RTDB order only then.

-- Keys whose RTDB position may differ from their byte-order position: digit-led (an integer, perhaps), "-"
-- and a digit (a negative integer) and anything non-ASCII (UTF-16 orders U+E000..U+FFFF after astral
-- characters). In unmapped paths also ".priority", which exports write before every sibling. A superset is
-- harmless: it only costs an exact sort.
CREATE FUNCTION rtdb_key_may_reorder(k text) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (k COLLATE "C" >= '0' AND k COLLATE "C" < ':')
        OR (k COLLATE "C" >= '-0' AND k COLLATE "C" < '-:')
        OR octet_length(k) <> length(k);

CREATE FUNCTION rtdb_path_may_reorder(p text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN array_to_string(p, '/') ~ '(^|/)(-?[0-9]|\.priority)'
        OR octet_length(array_to_string(p, '/')) <> length(array_to_string(p, '/'));

-- A text whose "C" order is the order exports write keys in: ".priority" first (as the empty string), then
-- RTDB's key order: integers as chr(1) and a fixed-width offset value (ties, such as "7" and "07", by
-- length), other keys as chr(2) and the key with each character from U+E000 up prefixed so
-- that astral characters (U+E000 marker) sort before U+E000..U+FFFF (U+E001 marker), as their surrogates do.
CREATE FUNCTION rtdb_key_sort(k text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE
        WHEN k = '.priority' THEN ''
        WHEN k ~ '^-?0*[0-9]{1,10}$' AND length(k) < 40 AND
             CASE WHEN k ~ '^-?0*[0-9]{1,10}$' THEN k::numeric BETWEEN -2147483648 AND 2147483647 END
        THEN chr(1) || lpad((k::numeric + 2147483648)::text, 10, '0') || lpad(length(k)::text, 10, '0')
        ELSE chr(2) || regexp_replace(
            regexp_replace(k, '([\uE000-\uFFFF])', chr(57345) || '\1', 'g'),
            '([\U00010000-\U0010FFFF])', chr(57344) || '\1', 'g')
    END;

CREATE FUNCTION rtdb_path_sort(p text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ARRAY(SELECT rtdb_key_sort(e) FROM unnest(p) WITH ORDINALITY AS u(e, i) ORDER BY i);

CREATE INDEX users_reordered_keys ON users (uid) WHERE rtdb_key_may_reorder(uid);
CREATE INDEX posts_reordered_keys ON posts (owner_uid)
    WHERE rtdb_key_may_reorder(owner_uid) OR rtdb_key_may_reorder(post_key);
CREATE INDEX feed_posts_reordered_keys ON feed_posts (post_id) WHERE rtdb_key_may_reorder(post_id);
CREATE INDEX post_likes_reordered_keys ON post_likes (post_key)
    WHERE rtdb_key_may_reorder(post_key) OR rtdb_key_may_reorder(liker_uid);
CREATE INDEX followers_reordered_keys ON followers (uid)
    WHERE rtdb_key_may_reorder(uid) OR rtdb_key_may_reorder(follower_uid);
CREATE INDEX following_reordered_keys ON following (uid)
    WHERE rtdb_key_may_reorder(uid) OR rtdb_key_may_reorder(followee_uid);
CREATE INDEX timeline_reordered_keys ON timeline (uid)
    WHERE rtdb_key_may_reorder(uid) OR rtdb_key_may_reorder(post_key);
CREATE INDEX chats_reordered_keys ON chats (uid)
    WHERE rtdb_key_may_reorder(uid) OR rtdb_key_may_reorder(chat_key);
CREATE INDEX messages_reordered_keys ON messages (chat_key)
    WHERE rtdb_key_may_reorder(chat_key) OR rtdb_key_may_reorder(message_key);
CREATE INDEX unmapped_values_reordered_keys ON unmapped_values (root)
    WHERE rtdb_key_may_reorder(root) OR root = '.priority' OR rtdb_path_may_reorder(path);
