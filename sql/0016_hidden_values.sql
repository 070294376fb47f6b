-- A node never has both a value of its own and children: in Firebase a write below a leaf replaces the leaf.
-- Versions before this one kept the leaf's row when a write went below it (issue 45): hidden while something was
-- below it, back in the export once that went, and printed beside it as a repeated key in some sequences. The
-- check `hidden_values` lists such leaves; its repair (`repair hidden-values`, `check --fix`) deletes them, as
-- Firebase replaced them: a write at a node deletes everything below it, so where a leaf and something below it
-- are both stored, the leaf is what a later write should have replaced.
--
-- A leaf is an unmapped value, or a typed like or follow (`true`). What lies below one is an unmapped value or a
-- typed row: a record (a user, a post, a chat copy …) counts as soon as it exists, since it is an object.

-- A node's path as the console writes it: /root/key/key.
CREATE FUNCTION tree_path(root text, path text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '/' || root || CASE WHEN cardinality(path) = 0 THEN '' ELSE '/' || array_to_string(path, '/') END;

CREATE VIEW integrity_hidden_values AS
    -- An unmapped leaf with unmapped values below it: a node's sort_key is a prefix of its descendants', so the
    -- next row in sort_key order is below the leaf if anything is.
    SELECT tree_path(root, path) AS path
    FROM (SELECT root, path, sort_key, lead(sort_key) OVER (ORDER BY sort_key) AS next FROM unmapped_values) v
    WHERE starts_with(v.next, v.sort_key)
    -- An unmapped leaf at a typed table's root, or one or two keys down, with a typed row at or below it. A branch
    -- per table, each a join of the few such leaves with one table: Citus pushes a join of its reference table
    -- (unmapped_values) with one distributed table down to the shards, and plans no query that correlates several.
    UNION ALL
    SELECT tree_path(v.root, v.path)
    FROM unmapped_values v
    WHERE cardinality(v.path) = 0 AND CASE v.root
        WHEN 'users' THEN EXISTS (SELECT 1 FROM users LIMIT 1)
        WHEN 'posts' THEN EXISTS (SELECT 1 FROM posts LIMIT 1) OR EXISTS (SELECT 1 FROM feed_posts LIMIT 1)
        WHEN 'postLikes' THEN EXISTS (SELECT 1 FROM post_likes LIMIT 1)
        WHEN 'followers' THEN EXISTS (SELECT 1 FROM followers LIMIT 1)
        WHEN 'following' THEN EXISTS (SELECT 1 FROM following LIMIT 1)
        WHEN 'timeline' THEN EXISTS (SELECT 1 FROM timeline LIMIT 1)
        WHEN 'chats' THEN EXISTS (SELECT 1 FROM chats LIMIT 1)
        WHEN 'messages' THEN EXISTS (SELECT 1 FROM messages LIMIT 1)
        ELSE false END
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path)
    FROM unmapped_values v JOIN users t ON t.uid = v.path[1]
    WHERE v.root = 'users' AND cardinality(v.path) = 1
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path)
    FROM unmapped_values v JOIN posts t ON t.owner_uid = v.path[1]
    WHERE v.root = 'posts' AND cardinality(v.path) = 1
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path)
    FROM unmapped_values v JOIN feed_posts t ON t.post_id = v.path[1]
    WHERE v.root = 'posts' AND cardinality(v.path) = 1
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path)
    FROM unmapped_values v JOIN post_likes t ON t.post_key = v.path[1]
    WHERE v.root = 'postLikes' AND cardinality(v.path) = 1
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path)
    FROM unmapped_values v JOIN followers t ON t.uid = v.path[1]
    WHERE v.root = 'followers' AND cardinality(v.path) = 1
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path)
    FROM unmapped_values v JOIN following t ON t.uid = v.path[1]
    WHERE v.root = 'following' AND cardinality(v.path) = 1
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path)
    FROM unmapped_values v JOIN timeline t ON t.uid = v.path[1]
    WHERE v.root = 'timeline' AND cardinality(v.path) = 1
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path)
    FROM unmapped_values v JOIN chats t ON t.uid = v.path[1]
    WHERE v.root = 'chats' AND cardinality(v.path) = 1
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path)
    FROM unmapped_values v JOIN messages t ON t.chat_key = v.path[1]
    WHERE v.root = 'messages' AND cardinality(v.path) = 1
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path)
    FROM unmapped_values v JOIN posts t ON t.owner_uid = v.path[1] AND t.post_key = v.path[2]
    WHERE v.root = 'posts' AND cardinality(v.path) = 2
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path)
    FROM unmapped_values v JOIN timeline t ON t.uid = v.path[1] AND t.post_key = v.path[2]
    WHERE v.root = 'timeline' AND cardinality(v.path) = 2
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path)
    FROM unmapped_values v JOIN chats t ON t.uid = v.path[1] AND t.chat_key = v.path[2]
    WHERE v.root = 'chats' AND cardinality(v.path) = 2
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path)
    FROM unmapped_values v JOIN messages t ON t.chat_key = v.path[1] AND t.message_key = v.path[2]
    WHERE v.root = 'messages' AND cardinality(v.path) = 2
    -- A typed like or follow with unmapped values below it. (A like or a follow two keys down beside an unmapped
    -- leaf there is no case: a write replaces the one with the other, never beside it.)
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path[1:2])
    FROM unmapped_values v JOIN post_likes t ON t.post_key = v.path[1] AND t.liker_uid = v.path[2]
    WHERE v.root = 'postLikes' AND cardinality(v.path) > 2
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path[1:2])
    FROM unmapped_values v JOIN followers t ON t.uid = v.path[1] AND t.follower_uid = v.path[2]
    WHERE v.root = 'followers' AND cardinality(v.path) > 2
    UNION ALL
    SELECT DISTINCT tree_path(v.root, v.path[1:2])
    FROM unmapped_values v JOIN following t ON t.uid = v.path[1] AND t.followee_uid = v.path[2]
    WHERE v.root = 'following' AND cardinality(v.path) > 2;
