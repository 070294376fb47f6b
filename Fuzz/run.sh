#!/bin/sh
# Fuzzes every reader of bytes the console has (see Fuzz/Targets/FuzzTargets.swift) with libFuzzer, AddressSanitizer
# on, inputs up to a megabyte; the structural seeds (deep, wide, bombs) join the committed corpus.
#
#   Fuzz/run.sh [SECONDS] [libFuzzer flags…]      default 60 s; e.g. Fuzz/run.sh 1800 -jobs=2 -workers=2
#   FUZZ_TARGET=sync Fuzz/run.sh 600              one target only
#
# The build goes to .build-fuzz; new interesting inputs to .build-fuzz/corpus, crashes to .build-fuzz/crashes/.
# Reproduce a crash with: swift run Fuzz .build-fuzz/crashes/crash-…  (then make it a regression test).
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-60}
[ $# -gt 0 ] && shift
swift build -c release --product Fuzz --scratch-path .build-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
mkdir -p .build-fuzz/corpus .build-fuzz/crashes .build-fuzz/seeds
# From .build-fuzz, where libFuzzer's -jobs write their fuzz-N.log files.
cd .build-fuzz
FUZZ_SEEDS=seeds ./release/Fuzz -runs=0 seeds >/dev/null 2>&1 || true
exec ./release/Fuzz corpus ../Fuzz/corpus seeds -max_total_time="$seconds" -max_len=1048576 -rss_limit_mb=2048 \
    -artifact_prefix=crashes/ -print_final_stats=1 "$@"
