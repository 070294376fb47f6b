#!/bin/sh
# Fuzzes the streaming JSON reader and the import mapping with libFuzzer (AddressSanitizer on).
#
#   Fuzz/run.sh [SECONDS] [libFuzzer flags…]      default 60 s; e.g. Fuzz/run.sh 3600 -jobs=2
#
# The build goes to .build-fuzz; new interesting inputs to .build-fuzz/corpus, crashes to .build-fuzz/crashes/.
# Reproduce a crash with: swift run Fuzz .build-fuzz/crashes/crash-…  (then make it a regression test).
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-60}
[ $# -gt 0 ] && shift
swift build -c release --product Fuzz --scratch-path .build-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
mkdir -p .build-fuzz/corpus .build-fuzz/crashes
exec .build-fuzz/release/Fuzz .build-fuzz/corpus Fuzz/corpus -max_total_time="$seconds" -max_len=65536 \
    -artifact_prefix=.build-fuzz/crashes/ -print_final_stats=1 "$@"
