-- Real Firebase Auth uids start with a digit about one time in six, and 0002's test for keys that may sort
-- differently took every digit-led key for a possible integer: one such uid made an export sort its whole table
-- by rtdb_key_sort instead of reading it in index order (about 20 times slower). Only a key that is all digits
-- (after an optional "-") can be an integer, and byte order already places every other ASCII key, digit-led or
-- not, where RTDB does, since strings sort after all integers and among themselves by code unit. A superset is
-- still harmless ("1-2" is tested too); non-ASCII keys are still always tested.
CREATE OR REPLACE FUNCTION rtdb_key_may_reorder(k text) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ((k COLLATE "C" >= '0' AND k COLLATE "C" < ':') OR (k COLLATE "C" >= '-0' AND k COLLATE "C" < '-:'))
            AND ltrim(k, '-0123456789') = ''
        OR octet_length(k) <> length(k);

CREATE OR REPLACE FUNCTION rtdb_path_may_reorder(p text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN array_to_string(p, '/') ~ '(^|/)(-?[0-9]+(/|$)|\.priority)'
        OR octet_length(array_to_string(p, '/')) <> length(array_to_string(p, '/'));

-- The partial indexes hold the rows the old functions chose; rebuild them with the new ones.
REINDEX INDEX users_reordered_keys;
REINDEX INDEX posts_reordered_keys;
REINDEX INDEX feed_posts_reordered_keys;
REINDEX INDEX post_likes_reordered_keys;
REINDEX INDEX followers_reordered_keys;
REINDEX INDEX following_reordered_keys;
REINDEX INDEX timeline_reordered_keys;
REINDEX INDEX chats_reordered_keys;
REINDEX INDEX messages_reordered_keys;
REINDEX INDEX unmapped_values_reordered_keys;
