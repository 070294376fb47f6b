#!/bin/bash
# The longest a reader waits while a whole-tree import runs (BENCHMARKS-LOG.md, issue 42):
#   Benchmarks/reader_wait.sh FILE.json [IMPORT OPTIONS...]
# Runs `admin import FILE --yes` on the embedded cluster in $ADMIN_DATA_DIR (or on the database of the conninfo
# in $DB, a Citus coordinator's say) while two readers poll every 50 ms: psql reading one user (the app's point
# read) and `admin get /users/UID` (a console process each time). Prints the import's wall time, each reader's
# longest single read, and how many reads failed.
set -euo pipefail
file=$1
shift
if [[ -n ${DB:-} ]]; then
    admin=(${ADMIN:-.build/release/admin} --db "$DB")
    psql=(psql "$DB" -qAt)
else
    admin=(${ADMIN:-.build/release/admin})
    psql=(psql -h "$ADMIN_DATA_DIR/pgdata" -p 5432 -d admin -qAt)
fi
uid=$("${psql[@]}" -c "SELECT uid FROM users ORDER BY uid LIMIT 1")
done_flag=$(mktemp -u)
poll() {
    local name=$1
    shift
    local longest=0 reads=0 failures=0
    while [ ! -e "$done_flag" ]; do
        local start
        start=$(date +%s%N)
        "$@" > /dev/null 2>&1 || failures=$((failures + 1))
        local took=$((($(date +%s%N) - start) / 1000000))
        [ "$took" -gt "$longest" ] && longest=$took
        reads=$((reads + 1))
        sleep 0.05
    done
    echo "$name: longest read $longest ms of $reads reads, $failures failed"
}
poll "psql point read" "${psql[@]}" -c "SELECT username FROM users WHERE uid = '$uid'" &
point=$!
poll "admin get" "${admin[@]}" get "/users/$uid" &
get=$!
sleep 1
start=$(date +%s%N)
"${admin[@]}" import "$file" --yes -q "$@" > /dev/null
echo "import: $((($(date +%s%N) - start) / 1000000)) ms"
touch "$done_flag"
wait "$point" "$get"
rm -f "$done_flag"
