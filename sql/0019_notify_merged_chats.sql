-- chat merge --all in one set of statements (issue 42): notify_chat read one chat's copies per call, so a merge of
-- N groups asked the shards N times (59 calls: 56 ms on Citus against 3 ms on one server). notify_chats tells the
-- listeners of every copy of `chats` that `holders` hold, read in one statement (on Citus from the holders'
-- shards alone), then of the copies `gone_chats`/`gone_uids` name (pairwise) that are gone. Events as
-- notify_chat sends them.
CREATE OR REPLACE FUNCTION notify_chats(chats text[], holders text[], gone_chats text[], gone_uids text[])
    RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    event record;
BEGIN
    -- Citus prunes nothing by an empty array.
    IF cardinality(holders) > 0 THEN
        FOR event IN
            SELECT '/chats/' || c.uid || '/' || c.chat_key AS path,
                json_build_object('title', c.title, 'memberHash', c.member_hash,
                                  'members', (SELECT json_object_agg(m, true) FROM unnest(c.members) AS m),
                                  'lastMessage', c.last_message, 'lastMessageSent', c.last_message_sent) AS data
            FROM chats c
            WHERE c.chat_key = ANY (chats) AND c.uid = ANY (holders)
            ORDER BY c.chat_key, c.uid
        LOOP
            PERFORM notify_event('admin_chats', event.path, event.data);
        END LOOP;
    END IF;
    FOR event IN SELECT '/chats/' || g.uid || '/' || g.chat_key AS path FROM unnest(gone_chats, gone_uids) AS g(chat_key, uid)
    LOOP
        PERFORM pg_notify('admin_chats', json_build_object('path', event.path)::text);
    END LOOP;
END
$$;

-- One chat's events (chat send, chat merge KEEP DROP) as notify_chats sends them, so that one place builds them.
CREATE OR REPLACE FUNCTION notify_chat(chat text, gone text[] DEFAULT '{}') RETURNS void
    LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    holders text[];
BEGIN
    -- A variable, not a subquery: Citus prunes shards by a parameter's values, not by a subplan's rows.
    holders := ARRAY(SELECT h.uid FROM chat_holders h WHERE h.chat_key = chat);
    PERFORM notify_chats(ARRAY[chat], holders, array_fill(chat, ARRAY[cardinality(gone)]), gone);
END
$$;
