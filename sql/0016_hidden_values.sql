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
    UNION ALL
    -- An unmapped leaf at a typed table's root, or on the way to its rows: a typed row at or below it.
    SELECT tree_path(v.root, v.path)
    FROM unmapped_values v
    WHERE cardinality(v.path) <= 2
        AND v.root IN ('users', 'posts', 'postLikes', 'followers', 'following', 'timeline', 'chats', 'messages')
        AND CASE cardinality(v.path)
            WHEN 0 THEN CASE v.root
                WHEN 'users' THEN EXISTS (SELECT 1 FROM users LIMIT 1)
                WHEN 'posts' THEN EXISTS (SELECT 1 FROM posts LIMIT 1) OR EXISTS (SELECT 1 FROM feed_posts LIMIT 1)
                WHEN 'postLikes' THEN EXISTS (SELECT 1 FROM post_likes LIMIT 1)
                WHEN 'followers' THEN EXISTS (SELECT 1 FROM followers LIMIT 1)
                WHEN 'following' THEN EXISTS (SELECT 1 FROM following LIMIT 1)
                WHEN 'timeline' THEN EXISTS (SELECT 1 FROM timeline LIMIT 1)
                WHEN 'chats' THEN EXISTS (SELECT 1 FROM chats LIMIT 1)
                ELSE EXISTS (SELECT 1 FROM messages LIMIT 1) END
            WHEN 1 THEN CASE v.root
                WHEN 'users' THEN EXISTS (SELECT 1 FROM users t WHERE t.uid = v.path[1])
                WHEN 'posts' THEN EXISTS (SELECT 1 FROM posts t WHERE t.owner_uid = v.path[1])
                    OR EXISTS (SELECT 1 FROM feed_posts t WHERE t.post_id = v.path[1])
                WHEN 'postLikes' THEN EXISTS (SELECT 1 FROM post_likes t WHERE t.post_key = v.path[1])
                WHEN 'followers' THEN EXISTS (SELECT 1 FROM followers t WHERE t.uid = v.path[1])
                WHEN 'following' THEN EXISTS (SELECT 1 FROM following t WHERE t.uid = v.path[1])
                WHEN 'timeline' THEN EXISTS (SELECT 1 FROM timeline t WHERE t.uid = v.path[1])
                WHEN 'chats' THEN EXISTS (SELECT 1 FROM chats t WHERE t.uid = v.path[1])
                ELSE EXISTS (SELECT 1 FROM messages t WHERE t.chat_key = v.path[1]) END
            -- Two keys down: a record there (a user's record is one key down; a like or a follow there is a
            -- leaf, which a write replaces with its unmapped one, never beside it).
            ELSE CASE v.root
                WHEN 'posts' THEN EXISTS (SELECT 1 FROM posts t WHERE t.owner_uid = v.path[1] AND t.post_key = v.path[2])
                WHEN 'timeline' THEN EXISTS (SELECT 1 FROM timeline t WHERE t.uid = v.path[1] AND t.post_key = v.path[2])
                WHEN 'chats' THEN EXISTS (SELECT 1 FROM chats t WHERE t.uid = v.path[1] AND t.chat_key = v.path[2])
                WHEN 'messages' THEN
                    EXISTS (SELECT 1 FROM messages t WHERE t.chat_key = v.path[1] AND t.message_key = v.path[2])
                ELSE false END
            END
    UNION ALL
    -- A typed like or follow with unmapped values below it.
    SELECT DISTINCT tree_path(v.root, v.path[1:2])
    FROM unmapped_values v
    WHERE cardinality(v.path) > 2
        AND CASE v.root
            WHEN 'postLikes' THEN
                EXISTS (SELECT 1 FROM post_likes t WHERE t.post_key = v.path[1] AND t.liker_uid = v.path[2])
            WHEN 'followers' THEN
                EXISTS (SELECT 1 FROM followers t WHERE t.uid = v.path[1] AND t.follower_uid = v.path[2])
            WHEN 'following' THEN
                EXISTS (SELECT 1 FROM following t WHERE t.uid = v.path[1] AND t.followee_uid = v.path[2])
            ELSE false END;
