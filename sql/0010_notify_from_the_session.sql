-- 0004's events called pg_notify inside a statement that reads messages or chats. On Citus that statement runs on
-- the worker holding the rows, so the notification was sent there: listeners on the coordinator never heard it,
-- and a transaction touching two workers failed at commit (a worker cannot PREPARE a transaction that has
-- notified). The events are now built by a query and sent by a PL/pgSQL loop, in the session that runs the
-- operation; on a single server nothing changes (the same events, in the same order, at commit).

-- A new message, /messages/{chat}/{message}.
CREATE OR REPLACE FUNCTION notify_message(chat text, message text) RETURNS void
    LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    event record;
BEGIN
    FOR event IN
        SELECT '/messages/' || m.chat_key || '/' || m.message_key AS path,
            json_build_object('content', m.content, 'timestamp', m."timestamp",
                              'sender', json_build_object('uid', m.sender_uid, 'username', m.sender_username)) AS data
        FROM messages m
        WHERE m.chat_key = chat AND m.message_key = message
    LOOP
        PERFORM notify_event('admin_messages', event.path, event.data);
    END LOOP;
END
$$;

-- Every copy of a chat, /chats/{uid}/{chat}, as it is now; copies deleted (of the users in `gone`) are announced
-- by their path alone, which a listener finds empty.
CREATE OR REPLACE FUNCTION notify_chat(chat text, gone text[] DEFAULT '{}') RETURNS void
    LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    event record;
    member text;
BEGIN
    FOR event IN
        SELECT '/chats/' || c.uid || '/' || c.chat_key AS path,
            json_build_object('title', c.title, 'memberHash', c.member_hash,
                              'members', (SELECT json_object_agg(m, true) FROM unnest(c.members) AS m),
                              'lastMessage', c.last_message, 'lastMessageSent', c.last_message_sent) AS data
        FROM chats c
        WHERE c.chat_key = chat
    LOOP
        PERFORM notify_event('admin_chats', event.path, event.data);
    END LOOP;
    FOREACH member IN ARRAY gone LOOP
        PERFORM pg_notify('admin_chats', json_build_object('path', '/chats/' || member || '/' || chat)::text);
    END LOOP;
END
$$;
