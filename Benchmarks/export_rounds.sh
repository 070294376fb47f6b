#!/bin/bash
# Whole-tree export against psql's COPY TO of every table, both to /dev/null, rounds interleaved (BENCHMARKS.md,
# issue 42):
#   Benchmarks/export_rounds.sh ADMIN [ROUNDS]
# On the embedded cluster in $ADMIN_DATA_DIR (its store imported before). Prints each command's wall seconds, the
# machine's busy CPU seconds (every process, from /proc/stat) and the command's own user and system seconds.
set -euo pipefail
admin=$1 rounds=${2:-3}
server=(-h "$ADMIN_DATA_DIR/pgdata" -p 5432 -d admin)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for table in users posts feed_posts post_likes followers following timeline chats messages unmapped_values; do
    echo "\\copy $table to /dev/null"
done > "$work/copy.sql"

busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
measure() {
    local label=$1
    shift
    local before start
    before=$(busy)
    start=$(date +%s%N)
    /usr/bin/time -o "$work/time" -f "%U + %S" "$@" < /dev/null > /dev/null 2>&1
    local wall=$((($(date +%s%N) - start) / 1000000))
    local cpu=$(($(busy) - before))
    local hz
    hz=$(getconf CLK_TCK)
    printf '%-16s wall %6.2f s  machine CPU %6.1f s  own user+sys %s s\n' "$label" \
        "$(echo "$wall / 1000" | bc -l)" "$(echo "$cpu / $hz" | bc -l)" "$(tail -1 "$work/time")"
}

for _ in $(seq "$rounds"); do
    measure "COPY TO" psql "${server[@]}" -q -f "$work/copy.sql"
    measure "export" "$admin" -q export -
done
