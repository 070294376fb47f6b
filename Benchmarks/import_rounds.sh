#!/bin/bash
# Whole-tree imports of two admin binaries against pg_restore -j2, rounds interleaved (BENCHMARKS.md, issue 42):
#   Benchmarks/import_rounds.sh FILE.json OLD_ADMIN NEW_ADMIN [ROUNDS] [IMPORT OPTIONS...]
# On the embedded cluster in $ADMIN_DATA_DIR: imports FILE once with NEW_ADMIN, dumps the store (pg_dump -Fd -j2),
# then per round restores the dump into a new database with pg_restore -j 2 and imports FILE with OLD_ADMIN and
# NEW_ADMIN (--yes -q and the options given). Prints each command's wall seconds, the machine's busy CPU seconds
# (every process, from /proc/stat) and the console's own user and system seconds. Autovacuum is off meanwhile and
# each command starts after a CHECKPOINT (measure.sh), so that none pays for the one before.
set -euo pipefail
file=$1 old=$2 new=$3 rounds=${4:-2}
shift $(($# < 4 ? $# : 4))
server=(-h "$ADMIN_DATA_DIR/pgdata" -p 5432)
dump=$(mktemp -d) work=$dump

# shellcheck source=Benchmarks/measure.sh
source "$(dirname "$0")/measure.sh"
trap 'rm -rf "$dump"; restore_server' EXIT
quiet_server

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
