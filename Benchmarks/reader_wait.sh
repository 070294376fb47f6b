#!/bin/bash
# The longest a point read waits while a whole-tree import runs (BENCHMARKS.md, issue 42):
#   Benchmarks/reader_wait.sh FILE.json
# Runs `admin import FILE --yes` on the embedded cluster in $ADMIN_DATA_DIR while psql reads one user every
# 50 ms, then prints the import's wall time and the longest single read.
set -euo pipefail
file=$1
admin=${ADMIN:-.build/release/admin}
psql=(psql -h "$ADMIN_DATA_DIR/pgdata" -p 5432 -d admin -qAt)
uid=$("${psql[@]}" -c "SELECT uid FROM users ORDER BY uid LIMIT 1")
done_flag=$(mktemp -u)
longest=0
(
    while [ ! -e "$done_flag" ]; do
        start=$(date +%s%N)
        "${psql[@]}" -c "SELECT username FROM users WHERE uid = '$uid'" > /dev/null
        took=$((($(date +%s%N) - start) / 1000000))
        [ "$took" -gt "$longest" ] && longest=$took
        sleep 0.05
    done
    echo "longest read: $longest ms"
) &
reader=$!
sleep 1
start=$(date +%s%N)
"$admin" import "$file" --yes -q > /dev/null
echo "import: $((($(date +%s%N) - start) / 1000000)) ms"
touch "$done_flag"
wait "$reader"
rm -f "$done_flag"
