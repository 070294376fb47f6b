-- Reads in RTDB order without sorting whole tables, and limit queries that read only the rows they return.
--
-- 0002 and 0005 let an export ask whether a table holds any key whose RTDB position differs from its byte
-- position, and then sort the whole table by rtdb_key_sort. A node keyed by integers (an array, numeric uids,
-- epoch-millisecond logs) made every export of it sort, and `get --limit-to-last 2` read every row first. Here:
--
--   * rtdb_key_order(k) is a key's RTDB position as text: comparing two keys' values in "C" collation (byte by
--     byte) gives RTDB's key order with ".priority" first (what exports write).
--   * unmapped_values gains sort_key: the orders of root and every path element, each ended by chr(1), so that
--     one btree gives the whole table in export order and every node's descendants form one contiguous range of
--     it (children in RTDB order, each followed by its own descendants). The console computes it while importing
--     (FirebaseKey.appendOrder, which must agree with these functions byte for byte); SQL that writes paths
--     computes it with rtdb_path_order.
--   * Typed tables keep their primary keys, which give RTDB order for every key outside the digit-led ranges
--     ['-0', '-:') and ['0', ':') that holds no character from U+E000 up: rtdb_key_needs_order tells the others
--     apart, and a partial index per table orders just those by rtdb_key_order. An export merges the two.

-- RTDB order as text compared in "C" collation (byte by byte). ".priority" is nothing. A key that RTDB reads as a
-- 32-bit integer (-?0*[0-9]{1,10} within range) is chr(2), then '1' and its digits' count and digits for a value
-- of 0 or more, or '0', ten less the count and the digits' nines' complement for a negative one; a key with a sign
-- or leading zeros then adds its length in four digits and itself, so that keys of one value follow by length
-- ("7", "07") and then by bytes ("-0", "00": RTDB leaves their order undefined, an export needs one).
-- Any other key is chr(3) and its text, with each character from U+E000 to U+FFFF prefixed by U+E001 and each
-- astral character by U+E000, so that astral characters sort before U+E000..U+FFFF as their UTF-16 surrogates do.
-- Never chr(1), which ends each element of a path's order. The usual keys (plain text, and integers written as
-- such) take no regular expression and no cast. Not STRICT, and free of STABLE functions (convert_to), so that
-- PostgreSQL inlines it.
CREATE FUNCTION rtdb_key_order(k text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN k = '.priority' THEN ''
        WHEN k COLLATE "C" >= '1' AND k COLLATE "C" < ':' AND ltrim(k, '0123456789') = ''
             AND (length(k) < 10 OR (length(k) = 10 AND k COLLATE "C" <= '2147483647'))
            OR k = '0'
        THEN chr(2) || '1' || chr(48 + length(k)) || k
        WHEN ((k COLLATE "C" >= '0' AND k COLLATE "C" < ':') OR (k COLLATE "C" >= '-0' AND k COLLATE "C" < '-:'))
             AND ltrim(k, '-0123456789') = '' AND strpos(substr(k, 2), '-') = 0
             AND length(ltrim(ltrim(k, '-'), '0')) <= 10
        THEN CASE
            WHEN k::bigint BETWEEN 0 AND 2147483647
            THEN chr(2) || '1' || chr(48 + length(k::bigint::text)) || k::bigint::text || lpad(length(k)::text, 4, '0') || k
            WHEN k::bigint BETWEEN -2147483648 AND -1
            THEN chr(2) || '0' || chr(58 - length((-k::bigint)::text))
                || translate((-k::bigint)::text, '0123456789', '9876543210') || lpad(length(k)::text, 4, '0') || k
            ELSE chr(3) || k
        END
        WHEN octet_length(k) = length(k) THEN chr(3) || k
        ELSE chr(3) || regexp_replace(
            regexp_replace(k, '([\uE000-\uFFFF])', chr(57345) || '\1', 'g'),
            '([\U00010000-\U0010FFFF])', chr(57344) || '\1', 'g')
    END;

-- The sort key of the path root/path[1]/path[2]/...: each element's order and chr(1), which sorts below every
-- character an element's order holds, so that a node's descendants all lie between its own key and that key
-- with its last chr(1) raised to chr(2).
CREATE FUNCTION rtdb_path_order(root text, path text[]) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    result text := rtdb_key_order(root) || chr(1);
    element text;
BEGIN
    FOREACH element IN ARRAY path LOOP
        result := result || rtdb_key_order(element) || chr(1);
    END LOOP;
    RETURN result;
END $$;

-- Whether a typed key may sit elsewhere in RTDB order than in byte order: every key in the digit-led ranges (the
-- 32-bit integers are among them, and a primary-key range scan can then skip the whole range), and keys holding
-- a character from U+E000 up. Other non-ASCII text keeps UTF-16 order in UTF-8 byte order.
CREATE FUNCTION rtdb_key_needs_order(k text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (k COLLATE "C" >= '0' AND k COLLATE "C" < ':') OR (k COLLATE "C" >= '-0' AND k COLLATE "C" < '-:')
        OR (octet_length(k) <> length(k) AND k ~ '[\uE000-\U0010FFFF]');

ALTER TABLE unmapped_values ADD COLUMN sort_key text COLLATE "C";
UPDATE unmapped_values SET sort_key = rtdb_path_order(root, path);
ALTER TABLE unmapped_values ALTER COLUMN sort_key SET NOT NULL;
CREATE INDEX unmapped_values_sort_key ON unmapped_values (sort_key);
DROP INDEX unmapped_values_reordered_keys;

DROP INDEX users_reordered_keys, posts_reordered_keys, feed_posts_reordered_keys, post_likes_reordered_keys,
    followers_reordered_keys, following_reordered_keys, timeline_reordered_keys, chats_reordered_keys,
    messages_reordered_keys;
CREATE INDEX users_key_order ON users ((rtdb_key_order(uid) COLLATE "C")) WHERE rtdb_key_needs_order(uid);
CREATE INDEX posts_key_order ON posts ((rtdb_key_order(owner_uid) COLLATE "C"), (rtdb_key_order(post_key) COLLATE "C"))
    WHERE rtdb_key_needs_order(owner_uid) OR rtdb_key_needs_order(post_key);
CREATE INDEX feed_posts_key_order ON feed_posts ((rtdb_key_order(post_id) COLLATE "C")) WHERE rtdb_key_needs_order(post_id);
CREATE INDEX post_likes_key_order ON post_likes ((rtdb_key_order(post_key) COLLATE "C"), (rtdb_key_order(liker_uid) COLLATE "C"))
    WHERE rtdb_key_needs_order(post_key) OR rtdb_key_needs_order(liker_uid);
CREATE INDEX followers_key_order ON followers ((rtdb_key_order(uid) COLLATE "C"), (rtdb_key_order(follower_uid) COLLATE "C"))
    WHERE rtdb_key_needs_order(uid) OR rtdb_key_needs_order(follower_uid);
CREATE INDEX following_key_order ON following ((rtdb_key_order(uid) COLLATE "C"), (rtdb_key_order(followee_uid) COLLATE "C"))
    WHERE rtdb_key_needs_order(uid) OR rtdb_key_needs_order(followee_uid);
CREATE INDEX timeline_key_order ON timeline ((rtdb_key_order(uid) COLLATE "C"), (rtdb_key_order(post_key) COLLATE "C"))
    WHERE rtdb_key_needs_order(uid) OR rtdb_key_needs_order(post_key);
CREATE INDEX chats_key_order ON chats ((rtdb_key_order(uid) COLLATE "C"), (rtdb_key_order(chat_key) COLLATE "C"))
    WHERE rtdb_key_needs_order(uid) OR rtdb_key_needs_order(chat_key);
CREATE INDEX messages_key_order ON messages ((rtdb_key_order(chat_key) COLLATE "C"), (rtdb_key_order(message_key) COLLATE "C"))
    WHERE rtdb_key_needs_order(chat_key) OR rtdb_key_needs_order(message_key);
