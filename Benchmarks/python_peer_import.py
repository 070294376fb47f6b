#!/usr/bin/env python3
"""The import a team would write instead of the console: json.load the Makestagram export, then COPY each node's
rows into the same typed tables in one transaction (psycopg 3). It keeps only the known fields (the console also
keeps every unknown value), so it does less work than `admin import`.

usage: python_peer_import.py EXPORT.json CONNINFO
"""
import json
import sys

import psycopg


def posts(tree):
    for owner, owned in tree.get("posts", {}).items():
        for key, post in owned.items():
            poster = post.get("poster") or {}
            yield (owner, key, post.get("image_url"), post.get("image_height"), post.get("created_at"),
                   post.get("like_count"), poster.get("uid"), poster.get("username"))


def pairs(node):
    for parent, children in node.items():
        for child in children:
            yield (parent, child)


def timeline(tree):
    for uid, entries in tree.get("timeline", {}).items():
        for key, entry in entries.items():
            yield (uid, key, entry.get("poster_uid"))


def chats(tree):
    for uid, copies in tree.get("chats", {}).items():
        for key, chat in copies.items():
            yield (uid, key, chat.get("title"), chat.get("memberHash"), sorted(chat.get("members", {})),
                   chat.get("lastMessage"), chat.get("lastMessageSent"))


def messages(tree):
    for chat, messages in tree.get("messages", {}).items():
        for key, message in messages.items():
            sender = message.get("sender") or {}
            yield (chat, key, message.get("content"), message.get("timestamp"), sender.get("uid"),
                   sender.get("username"))


def main():
    path, conninfo = sys.argv[1], sys.argv[2]
    with open(path, "rb") as file:
        tree = json.load(file)
    loads = [
        ("users (uid, username)", ((uid, user.get("username")) for uid, user in tree.get("users", {}).items())),
        ("posts (owner_uid, post_key, image_url, image_height, created_at, like_count, poster_uid, poster_username)",
         posts(tree)),
        ("post_likes (post_key, liker_uid)", pairs(tree.get("postLikes", {}))),
        ("followers (uid, follower_uid)", pairs(tree.get("followers", {}))),
        ("following (uid, followee_uid)", pairs(tree.get("following", {}))),
        ("timeline (uid, post_key, poster_uid)", timeline(tree)),
        ("chats (uid, chat_key, title, member_hash, members, last_message, last_message_sent)", chats(tree)),
        ("messages (chat_key, message_key, content, timestamp, sender_uid, sender_username)", messages(tree)),
    ]
    with psycopg.connect(conninfo) as connection, connection.cursor() as cursor:
        cursor.execute("TRUNCATE users, posts, feed_posts, post_likes, followers, following, timeline, chats, "
                       "messages, unmapped_values")
        for table, rows in loads:
            with cursor.copy(f"COPY {table} FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)


if __name__ == "__main__":
    main()
