#!/bin/bash
# Every console command on a Citus coordinator against one server, as separate `admin` processes (BENCHMARKS-LOG.md,
# issue 42):
#   Benchmarks/citus_commands.sh ADMIN CITUS_CONNINFO ONE_SERVER_CONNINFO FILE.json [RUNS]
# Imports FILE into both stores (migrated; the Citus one distributed), picks a user with posts and followers, one
# of the posts they follow, a chat and its members, then runs each command RUNS times on each side, alternating,
# and prints the median wall seconds of each side and their ratio. Writes come in pairs that undo each other
# (like/unlike, follow/unfollow, set/remove) or add a little (a post, a message); the repairs and rewrites run on
# stores they already fixed, so each run does the same work.
set -euo pipefail
admin=$1 citus=$2 one=$3 file=$4 runs=${5:-5}

wall() { # the wall seconds of one run of admin on $1 with the rest as arguments
    local db=$1
    shift
    local start
    start=$(date +%s%N)
    "$admin" --db "$db" -q "$@" < /dev/null > /dev/null 2>&1 || true
    echo "scale=4; ($(date +%s%N) - $start) / 1000000000" | bc -l
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
measure() { # label, then the command's arguments
    local label=$1
    shift
    local c="" o=""
    for _ in $(seq "$runs"); do
        c+="$(wall "$citus" "$@")"$'\n'
        o+="$(wall "$one" "$@")"$'\n'
    done
    local cm om
    cm=$(printf '%s' "$c" | median)
    om=$(printf '%s' "$o" | median)
    printf '| %s | %.3f | %.3f | %.1f× |\n' "$label" "$cm" "$om" "$(echo "$cm / $om" | bc -l)"
}
sql() { psql "$one" -Atq -c "$1"; }

for db in "$citus" "$one"; do "$admin" --db "$db" -q import "$file" --yes > /dev/null; done
user=$(sql "SELECT uid FROM following GROUP BY uid ORDER BY count(*) DESC, uid LIMIT 1")
poster=$(sql "SELECT owner_uid FROM posts WHERE owner_uid IN (SELECT followee_uid FROM following WHERE uid = '$user') ORDER BY owner_uid LIMIT 1")
post=$(sql "SELECT post_key FROM posts WHERE owner_uid = '$poster' ORDER BY post_key LIMIT 1")
stranger=$(sql "SELECT uid FROM users WHERE uid NOT IN (SELECT followee_uid FROM following WHERE uid = '$user') AND uid <> '$user' ORDER BY uid LIMIT 1")
# The chat commands' user has chats (the user above may have none, and then they only fail).
chatter=$(sql "SELECT uid FROM chats GROUP BY uid ORDER BY count(*) DESC, uid LIMIT 1")
chat=$(sql "SELECT chat_key FROM chats WHERE uid = '$chatter' ORDER BY chat_key LIMIT 1")
other=$(sql "SELECT m FROM chats, unnest(members) m WHERE uid = '$chatter' AND chat_key = '$chat' AND m <> '$chatter' LIMIT 1")
[[ -n $chatter && -n $chat && -n $other ]] || { echo "no chat between two users in $file" >&2; exit 1; }

echo "| command | Citus s | one server s | ratio |"
echo "|---|---|---|---|"
measure "status" status
measure "get /users/UID" get "/users/$user"
measure "get /posts/UID" get "/posts/$poster"
measure "get /posts --order-by-key --limit-to-first 3" get /posts --order-by-key --limit-to-first 3
measure "get /posts --order-by-key --limit-to-last 3" get /posts --order-by-key --limit-to-last 3
measure "get /timeline/UID --limit-to-last 10" get "/timeline/$user" --order-by-key --limit-to-last 10
measure "timeline UID" timeline "$user"
measure "posts UID" posts "$poster"
measure "users" users
measure "chats UID" chats "$chatter"
measure "messages CHAT" messages "$chat"
measure "chat open A B" chat open "$chatter" "$other"
measure "feed recent" feed recent
measure "like" like "$user" "$post"
measure "unlike" unlike "$user" "$post"
measure "follow" follow "$user" "$stranger"
measure "unfollow" unfollow "$user" "$stranger"
measure "post create (fan-out)" post create "$poster" --image-url https://i/x.jpg --image-height 1
measure "chat send" chat send --from "$chatter" --to "$other" hello
measure "set a leaf" set "/users/$user/bio" '"hi"' --yes
measure "remove a leaf" remove "/users/$user/bio" --yes
measure "user rename" user rename "$user" renamed
measure "check (all)" check
measure "export to /dev/null" export /dev/null --force
measure "backfill like-counts" backfill like-counts --yes
measure "backfill timelines" backfill timelines --yes
measure "denormalize posters" denormalize posters --yes
measure "rehash chats" rehash chats --yes
measure "repair follows" repair follows --yes
measure "chat merge --all" chat merge --all --yes
measure "vacuum" vacuum
runs=1 measure "verify FILE" verify "$file"
runs=1 measure "sync FILE" sync "$file" --yes
runs=1 measure "import FILE (replace)" import "$file" --yes
