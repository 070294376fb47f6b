#!/bin/bash
# Whole-tree imports of two admin binaries against pg_restore -j2, rounds interleaved (BENCHMARKS.md, issue 42):
#   Benchmarks/import_rounds.sh FILE.json OLD_ADMIN NEW_ADMIN [ROUNDS] [IMPORT OPTIONS...]
# On the embedded cluster in $ADMIN_DATA_DIR: imports FILE once with NEW_ADMIN, dumps the store (pg_dump -Fd -j2),
# then per round restores the dump into a new database with pg_restore -j 2 and imports FILE with OLD_ADMIN and
# NEW_ADMIN (--yes -q and the options given). Prints each command's wall seconds, the machine's busy CPU seconds
# (every process, from /proc/stat) and the console's own user and system seconds.
set -euo pipefail
file=$1 old=$2 new=$3 rounds=${4:-2}
shift $(($# < 4 ? $# : 4))
server=(-h "$ADMIN_DATA_DIR/pgdata" -p 5432)
dump=$(mktemp -d)
trap 'rm -rf "$dump"' EXIT

busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
measure() {
    local label=$1
    shift
    local before start
    before=$(busy)
    start=$(date +%s%N)
    /usr/bin/time -o "$dump/time" -f "%U + %S" "$@" < /dev/null > /dev/null 2>&1
    local wall=$((($(date +%s%N) - start) / 1000000))
    local cpu=$(($(busy) - before))
    local hz
    hz=$(getconf CLK_TCK)
    printf '%-16s wall %6.2f s  machine CPU %6.1f s  own user+sys %s s\n' "$label" \
        "$(echo "$wall / 1000" | bc -l)" "$(echo "$cpu / $hz" | bc -l)" "$(tail -1 "$dump/time")"
}

"$new" import "$file" --yes -q "$@" > /dev/null
rm -rf "$dump/store"
pg_dump "${server[@]}" -Fd -j 2 -f "$dump/store" admin
for _ in $(seq "$rounds"); do
    psql "${server[@]}" -d admin -q -c "DROP DATABASE IF EXISTS restored" -c "CREATE DATABASE restored" 2> /dev/null
    measure "pg_restore -j2" pg_restore "${server[@]}" -j 2 -d restored "$dump/store"
    measure "old import" "$old" import "$file" --yes -q "$@"
    measure "new import" "$new" import "$file" --yes -q "$@"
done
psql "${server[@]}" -d admin -q -c "DROP DATABASE IF EXISTS restored"
