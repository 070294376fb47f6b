#!/usr/bin/env python3
"""A later export of the same database: changes a share of the users' subtrees of an export that
`admin generate` wrote, as a day of the app would, for benchmarking `admin sync`.

For each chosen user: one of their posts edited (its like count and image height), a like added and one of
theirs removed, a user followed and one unfollowed (both sides), and a message appended to one of their chats.
Objects it changes are put back in RTDB order, so the file is read in one pass, as a Firebase export is; with
--appended, new keys go at the end of their objects instead, as a script's edit (Python's dict order) leaves them.

    python3 Benchmarks/evolve_export.py IN.json OUT.json --percent 1 --seed 1 [--appended]
"""
import argparse
import json
import random
import re

INTEGER = re.compile(r"^-?[0-9]{1,10}$")


def rtdb_key(key):
    if INTEGER.match(key) and -(2**31) <= int(key) < 2**31:
        return (0, int(key), "")
    return (1, 0, key)


APPENDED = False


def put(parent, key, value):
    """Sets parent[key] and keeps parent's keys in RTDB order (unless APPENDED: then a new key goes last)."""
    parent[key] = value
    if APPENDED:
        return
    ordered = sorted(parent.items(), key=lambda item: rtdb_key(item[0]))
    parent.clear()
    parent.update(ordered)


def child(parent, key):
    """parent[key], created empty (in RTDB order) when missing."""
    if key not in parent:
        put(parent, key, {})
    return parent[key]


def push_id(rng):
    alphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
    return "-Z" + "".join(rng.choice(alphabet) for _ in range(18))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--percent", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--appended", action="store_true", help="new keys at the end of their objects")
    args = parser.parse_args()
    global APPENDED
    APPENDED = args.appended
    rng = random.Random(args.seed)
    with open(args.input, encoding="utf-8") as file:
        tree = json.load(file)
    users = list(tree.get("users", {}))
    chosen = rng.sample(users, max(1, int(len(users) * args.percent / 100)))
    post_likes = tree.setdefault("postLikes", {})
    liked_by = {}
    for post_key, likers in post_likes.items():
        for liker in likers:
            liked_by.setdefault(liker, []).append(post_key)
    post_keys = list(post_likes)
    changes = 0
    for uid in chosen:
        posts = tree.get("posts", {}).get(uid)
        if posts:
            post = posts[rng.choice(list(posts))]
            post["like_count"] = post.get("like_count", 0) + 1
            post["image_height"] = round(post.get("image_height", 300) + 1.5, 3)
            changes += 1
        if post_keys:
            put(child(post_likes, rng.choice(post_keys)), uid, True)
            changes += 1
        if liked_by.get(uid):
            key = liked_by[uid].pop()
            post_likes.get(key, {}).pop(uid, None)
            if not post_likes.get(key, True):
                del post_likes[key]
            changes += 1
        other = rng.choice(users)
        if other != uid:
            put(child(child(tree, "following"), uid), other, True)
            put(child(child(tree, "followers"), other), uid, True)
            changes += 1
        following = tree.get("following", {}).get(uid)
        if following and len(following) > 1:
            # The first in RTDB order other than the one just followed, whatever order the object is in.
            gone = next(key for key in sorted(following, key=rtdb_key) if key != other)
            del following[gone]
            followers = tree.get("followers", {}).get(gone, {})
            followers.pop(uid, None)
            if not followers:
                tree.get("followers", {}).pop(gone, None)
            changes += 1
        chats = tree.get("chats", {}).get(uid)
        if chats:
            chat_key = rng.choice(list(chats))
            username = tree["users"][uid].get("username", uid)
            message = {"content": "evolved", "sender": {"uid": uid, "username": username}, "timestamp": 1700000000.5}
            put(child(child(tree, "messages"), chat_key), push_id(rng), message)
            changes += 1
    with open(args.output, "w", encoding="utf-8") as file:
        json.dump(tree, file, ensure_ascii=False, separators=(",", ":"))
    print(f"{len(chosen)} users changed, {changes} changes, written to {args.output}")


if __name__ == "__main__":
    main()
