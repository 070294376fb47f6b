-- Realtime events of the app's operations, for LISTEN/NOTIFY. The operations call these inside their own
-- transaction, so an event is delivered only if what it announces committed, and in commit order.
--
-- Each event is JSON shaped like a put event of Firebase's REST streaming API: {"path": "/messages/{chat}/{key}",
-- "data": {...}}, data being the node at path as the app's tree holds it. NOTIFY payloads are limited to 8000
-- bytes: an event that would be longer leaves data out, and a listener reads the node at path instead (as it
-- is by then, which for a chat copy may already include a later message).
--
--   LISTEN admin_messages;  -- each new message
--   LISTEN admin_chats;     -- each changed chat copy (/chats/{uid}/{chat})

CREATE FUNCTION notify_event(channel text, path text, data json) RETURNS void
    LANGUAGE sql VOLATILE AS $$
    SELECT pg_notify(channel, CASE WHEN octet_length(event) < 8000 THEN event
                                   ELSE json_build_object('path', path)::text END)
    FROM (SELECT json_build_object('path', path, 'data', data)::text AS event) e
$$;

-- A new message, /messages/{chat}/{message}.
CREATE FUNCTION notify_message(chat text, message text) RETURNS void
    LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM notify_event('admin_messages', '/messages/' || m.chat_key || '/' || m.message_key,
        json_build_object('content', m.content, 'timestamp', m."timestamp",
                          'sender', json_build_object('uid', m.sender_uid, 'username', m.sender_username)))
    FROM messages m
    WHERE m.chat_key = chat AND m.message_key = message;
END
$$;

-- Every copy of a chat, /chats/{uid}/{chat}, as it is now; copies deleted (of the users in `gone`) are announced
-- by their path alone, which a listener finds empty.
CREATE FUNCTION notify_chat(chat text, gone text[] DEFAULT '{}') RETURNS void
    LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM notify_event('admin_chats', '/chats/' || c.uid || '/' || c.chat_key,
        json_build_object('title', c.title, 'memberHash', c.member_hash,
                          'members', (SELECT json_object_agg(m, true) FROM unnest(c.members) AS m),
                          'lastMessage', c.last_message, 'lastMessageSent', c.last_message_sent))
    FROM chats c
    WHERE c.chat_key = chat;
    PERFORM pg_notify('admin_chats', json_build_object('path', '/chats/' || g || '/' || chat)::text)
    FROM unnest(gone) AS g;
END
$$;
