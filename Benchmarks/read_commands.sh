#!/bin/bash
# The console's reads, two or more admin binaries interleaved on one store (BENCHMARKS-LOG.md, issue 42):
#   Benchmarks/read_commands.sh CONNINFO UID FILE RUNS ADMIN...
# Runs each read (status, a point get, a root get with a limit, a timeline, export, check, verify FILE) RUNS times
# with each binary in turn, each an `admin` process of its own, and prints one line per read: the median wall
# seconds of each binary, with the fastest and slowest run in brackets. UID names a user of the store.
set -euo pipefail
conninfo=$1 uid=$2 file=$3 runs=$4
shift 4
commands=(
    "status"
    "get /users/$uid"
    "get /posts --order-by-key --limit-to-first 3"
    "timeline $uid"
    "export /dev/null"
    "check"
    "verify $file"
)
times=$(mktemp -d)
trap 'rm -rf "$times"' EXIT
for command in "${commands[@]}"; do
    read -ra words <<< "$command"
    for run in $(seq "$runs"); do
        index=0
        for admin in "$@"; do
            start=$(date +%s.%N)
            "$admin" --db "$conninfo" -q "${words[@]}" > /dev/null 2>&1 || true # check exits 3 on violations
            end=$(date +%s.%N)
            echo "$end - $start" | bc >> "$times/$index"
            index=$((index + 1))
        done
    done
    line=$command
    for index in $(seq 0 $(($# - 1))); do
        line+=" | $(sort -n "$times/$index" | awk '{t[NR] = $1} END {
            printf "%.3f (%.3f-%.3f)", t[int((NR + 1) / 2)], t[1], t[NR] }')"
        rm "$times/$index"
    done
    echo "$line"
done
