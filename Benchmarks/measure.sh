# Sourced by the rounds scripts (import_rounds.sh, export_rounds.sh): `measure LABEL COMMAND...` runs COMMAND
# with no input and no output and prints its wall seconds, the machine's busy CPU seconds meanwhile (every
# process, from /proc/stat) and the command's own user and system seconds. Needs a scratch directory in $work.

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
