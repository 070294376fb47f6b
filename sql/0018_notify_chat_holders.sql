-- chat merge and chat send on Citus (issue 42): /chats/{uid}/{chat} is placed by its holder, so notify_chat, which
-- read a chat's copies by key alone, asked every shard (twice per chat `chat merge --all` merged). It now asks
-- chat_holders (placed by chat key, kept with the copies by every write in the same transaction) who holds the
-- chat, then reads the copies from those holders' shards alone. On a single server the events are the same.
CREATE OR REPLACE FUNCTION notify_chat(chat text, gone text[] DEFAULT '{}') RETURNS void
    LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    event record;
    member text;
    holders text[];
BEGIN
    -- A variable, not a subquery: Citus prunes shards by a parameter's values, not by a subplan's rows.
    holders := ARRAY(SELECT h.uid FROM chat_holders h WHERE h.chat_key = chat);
    -- No holder (a chat just merged away): nothing to read, and Citus prunes nothing by an empty array.
    IF cardinality(holders) > 0 THEN
        FOR event IN
            SELECT '/chats/' || c.uid || '/' || c.chat_key AS path,
                json_build_object('title', c.title, 'memberHash', c.member_hash,
                                  'members', (SELECT json_object_agg(m, true) FROM unnest(c.members) AS m),
                                  'lastMessage', c.last_message, 'lastMessageSent', c.last_message_sent) AS data
            FROM chats c
            WHERE c.chat_key = chat AND c.uid = ANY (holders)
        LOOP
            PERFORM notify_event('admin_chats', event.path, event.data);
        END LOOP;
    END IF;
    FOREACH member IN ARRAY gone LOOP
        PERFORM pg_notify('admin_chats', json_build_object('path', '/chats/' || member || '/' || chat)::text);
    END LOOP;
END
$$;
