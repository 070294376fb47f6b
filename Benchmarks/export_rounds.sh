#!/bin/bash
# Whole-tree export against psql's COPY TO of every table, both to /dev/null, rounds interleaved (BENCHMARKS-LOG.md,
# issue 42):
#   Benchmarks/export_rounds.sh ADMIN [ROUNDS]
# On the embedded cluster in $ADMIN_DATA_DIR (its store imported before). Prints each command's wall seconds, the
# machine's busy CPU seconds (every process, from /proc/stat) and the command's own user and system seconds.
set -euo pipefail
admin=$1 rounds=${2:-3}
server=(-h "$ADMIN_DATA_DIR/pgdata" -p 5432 -d admin)
work=$(mktemp -d)
trap 'rm -rf "$work"; restore_server' EXIT
for table in users posts feed_posts post_likes followers following timeline chats messages unmapped_values; do
    echo "\\copy $table to /dev/null"
done > "$work/copy.sql"

# shellcheck source=Benchmarks/measure.sh
source "$(dirname "$0")/measure.sh"
quiet_server

for _ in $(seq "$rounds"); do
    measure "COPY TO" psql "${server[@]}" -q -f "$work/copy.sql"
    measure "export" "$admin" -q export -
done
