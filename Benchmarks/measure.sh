# Sourced by the rounds scripts (import_rounds.sh, export_rounds.sh): `measure LABEL COMMAND...` runs COMMAND
# with no input and no output and prints its wall seconds, the machine's busy CPU seconds meanwhile (every
# process, from /proc/stat) and the command's own user and system seconds. Needs a scratch directory in $work.
# With the array `server` (psql's connection options) set, each command starts after a CHECKPOINT, so that none
# pays for the dirty pages of the one before; `quiet_server` turns autovacuum off for the rounds, which would
# otherwise vacuum the last import's tables during the next command.

busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }

measure() {
    local label=$1
    shift
    local before start
    if [[ -v server ]]; then psql "${server[@]}" -d postgres -q -c "CHECKPOINT"; fi
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

# Autovacuum off for the rounds, and back on: run `restore_server` from the script's EXIT trap.
quiet_server() {
    psql "${server[@]}" -d postgres -q -c "ALTER SYSTEM SET autovacuum = off" -c "SELECT pg_reload_conf()" > /dev/null
}
restore_server() {
    psql "${server[@]}" -d postgres -q -c "ALTER SYSTEM RESET autovacuum" -c "SELECT pg_reload_conf()" > /dev/null
}
