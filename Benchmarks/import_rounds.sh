#!/bin/bash
# Whole-tree imports of two admin binaries against pg_restore -j2, rounds interleaved (BENCHMARKS-LOG.md, issue 42):
#   Benchmarks/import_rounds.sh FILE.json OLD_ADMIN NEW_ADMIN [ROUNDS] [IMPORT OPTIONS...]
# On the embedded cluster in $ADMIN_DATA_DIR: imports FILE once with NEW_ADMIN, dumps the store (pg_dump -Fd -j2),
# then per round restores the dump into a new database with pg_restore -j 2 and imports FILE with OLD_ADMIN and
# NEW_ADMIN (--yes -q and the options given), and, the like-for-like yardstick, restores it over a database that
# holds the store (pg_restore -j 2 --clean, then vacuumdb --analyze-only -j 2: an import also replaces a store and
# leaves its statistics), the four in an order that turns each round. Prints each command's
# wall seconds, the machine's busy CPU seconds (every process, from /proc/stat) and the console's own user and
# system seconds. Autovacuum is off meanwhile and each command starts after a CHECKPOINT (measure.sh), so that
# none pays for the one before.
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
restore() {
    psql "${server[@]}" -d admin -q -c "DROP DATABASE IF EXISTS restored" -c "CREATE DATABASE restored" 2> /dev/null
    measure "pg_restore -j2" pg_restore "${server[@]}" -j 2 -d restored "$dump/store"
}
psql "${server[@]}" -d admin -q -c "DROP DATABASE IF EXISTS replaced" -c "CREATE DATABASE replaced" 2> /dev/null
pg_restore "${server[@]}" -j 2 -d replaced "$dump/store"
replace() {
    measure "restore+analyze" bash -c 'pg_restore "$@" -j 2 --clean --if-exists -d replaced "$0" &&
        vacuumdb "$@" --analyze-only -q -j 2 -d replaced' "$dump/store" "${server[@]}"
}
old_import() { measure "old import" "$old" import "$file" --yes -q "$@"; }
new_import() { measure "new import" "$new" import "$file" --yes -q "$@"; }
# The order turns each round: a command run right after pg_restore was measured slower (an import 21-22 s after
# an import, 23-27 s after pg_restore, at 1.1 GB), so each command follows each of the others as often (in four
# rounds).
steps=(restore replace old_import new_import)
for round in $(seq "$rounds"); do
    for i in 0 1 2 3; do
        "${steps[$(((round - 1 + i) % 4))]}" "$@"
    done
done
psql "${server[@]}" -d admin -q -c "DROP DATABASE IF EXISTS restored" -c "DROP DATABASE IF EXISTS replaced"
