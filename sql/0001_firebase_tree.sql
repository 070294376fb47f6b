-- The store mirrors the app's Firebase tree: one table per node, one row per child, so that
-- the console can check and repair the app's denormalized copies as data.
--
-- Conventions, for every table below:
--   * Keys are text COLLATE "C": Firebase keys are strings (numeric-looking keys can exceed 2^53 or
--     carry leading zeros), and "C" gives byte order, which is Firebase's key order for all
--     non-integer keys and makes COPY of key-ordered rows fast.
--   * Firebase numbers are IEEE doubles and are stored as double precision, bit for bit. Counters
--     (like_count, votes) are bigint: a stored value that is not an integer within +-2^53 goes to
--     `extra` instead, with the typed column left NULL.
--   * A typed column is NULL when the field is absent from the tree or has a type the column cannot
--     hold. `extra` is a partial Firebase subtree of that same node (unknown fields, fields of an
--     unexpected type, `.priority`), deep-merged over the typed fields on export. NULL when empty.
--   * Whatever has no typed row at all (unknown top-level nodes, subtrees that do not match the
--     app's shape) is kept leaf by leaf in `unmapped_values`.
--   * Citus-shaped (shared/distributed-postgres.md): every primary key leads with the table's
--     distribution column, no triggers, no sequences, no foreign keys across co-location groups.

-- /users/{uid}: {username}
CREATE TABLE users (
    uid         text COLLATE "C" NOT NULL,
    username    text,
    extra       jsonb,
    PRIMARY KEY (uid)
);

-- /posts/{owner_uid}/{post_key}: {image_url, image_height, created_at, like_count, poster {uid, username}}
-- (Makestagram). created_at is in seconds, fractional.
CREATE TABLE posts (
    owner_uid        text COLLATE "C" NOT NULL,
    post_key         text COLLATE "C" NOT NULL,
    image_url        text,
    image_height     double precision,
    created_at       double precision,
    like_count       bigint,
    poster_uid       text COLLATE "C",
    poster_username  text,
    extra            jsonb,
    PRIMARY KEY (owner_uid, post_key)
);
-- A user's posts, newest first.
CREATE INDEX posts_owner_created_at ON posts (owner_uid, created_at DESC);
-- Lookups by post key alone (likes, timelines and the checks join on it).
CREATE INDEX posts_post_key ON posts (post_key);

-- /posts/{post_id}: {imageFileURL, user, votes, timestamp} (AppCoda's flat feed). timestamp is in
-- milliseconds. A tree holds one dialect under /posts; the import decides which.
CREATE TABLE feed_posts (
    post_id         text COLLATE "C" NOT NULL,
    image_file_url  text,
    user_name       text,
    votes           bigint,
    timestamp_ms    double precision,
    extra           jsonb,
    PRIMARY KEY (post_id)
);
-- The feed, newest first, keyset-paged by (timestamp, post id).
CREATE INDEX feed_posts_timestamp ON feed_posts (timestamp_ms DESC, post_id DESC);

-- /postLikes/{post_key}/{liker_uid}: true
-- Keyed by post key, as in the tree: a like whose post does not exist is still data (reported by
-- the `orphans` check, never dropped by an import), so it cannot carry the post owner's uid.
CREATE TABLE post_likes (
    post_key   text COLLATE "C" NOT NULL,
    liker_uid  text COLLATE "C" NOT NULL,
    PRIMARY KEY (post_key, liker_uid)
);

-- /followers/{uid}/{follower_uid}: true
CREATE TABLE followers (
    uid           text COLLATE "C" NOT NULL,
    follower_uid  text COLLATE "C" NOT NULL,
    PRIMARY KEY (uid, follower_uid)
);

-- /following/{uid}/{followee_uid}: true
CREATE TABLE following (
    uid           text COLLATE "C" NOT NULL,
    followee_uid  text COLLATE "C" NOT NULL,
    PRIMARY KEY (uid, followee_uid)
);

-- /timeline/{uid}/{post_key}: {poster_uid}. Newest first is post key descending (push IDs sort
-- by creation time), which the primary key serves.
CREATE TABLE timeline (
    uid         text COLLATE "C" NOT NULL,
    post_key    text COLLATE "C" NOT NULL,
    poster_uid  text COLLATE "C",
    extra       jsonb,
    PRIMARY KEY (uid, post_key)
);

-- /chats/{uid}/{chat_key}: {title, memberHash, members {uid: true, ...}, lastMessage, lastMessageSent}
-- One row per member's copy. members holds the keys of the members map, sorted.
CREATE TABLE chats (
    uid                text COLLATE "C" NOT NULL,
    chat_key           text COLLATE "C" NOT NULL,
    title              text,
    member_hash        text,
    members            text[] COLLATE "C",
    last_message       text,
    last_message_sent  double precision,
    extra              jsonb,
    PRIMARY KEY (uid, chat_key)
);
-- A user's chats, most recent message first.
CREATE INDEX chats_uid_last_message_sent ON chats (uid, last_message_sent DESC);
-- All copies of one chat (the chat checks and repairs group by it).
CREATE INDEX chats_chat_key ON chats (chat_key);

-- /messages/{chat_key}/{message_key}: {content, timestamp, sender {uid, username}}
CREATE TABLE messages (
    chat_key         text COLLATE "C" NOT NULL,
    message_key      text COLLATE "C" NOT NULL,
    content          text,
    "timestamp"      double precision,
    sender_uid       text COLLATE "C",
    sender_username  text,
    extra            jsonb,
    PRIMARY KEY (chat_key, message_key)
);
-- A chat's messages in time order.
CREATE INDEX messages_chat_timestamp ON messages (chat_key, "timestamp");

-- Every leaf of the tree that has no typed row: /{root}/{path...} = value. Priorities are kept as
-- the pseudo-children `.priority` and `.value`, exactly as the export format writes them, and an
-- array's elements by their integer keys. Exactly one of the value columns is set.
CREATE TABLE unmapped_values (
    root           text COLLATE "C" NOT NULL,
    path           text[] COLLATE "C" NOT NULL,
    string_value   text,
    number_value   double precision,
    boolean_value  boolean,
    PRIMARY KEY (root, path),
    CONSTRAINT unmapped_values_one_value
        CHECK (num_nonnulls(string_value, number_value, boolean_value) = 1)
);
