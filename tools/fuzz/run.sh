#!/bin/sh
# Run the engine fuzzer for a given time, niced, one process.
#   tools/fuzz/run.sh [SECONDS] [BUILD]      (defaults: 600, build)
# Builds `make fuzz`, writes the seed corpus (exported-style models) to
# $BUILD/fuzz/seeds, keeps the growing corpus in $BUILD/fuzz/corpus and any
# crash / timeout / out-of-memory input in $BUILD/fuzz/artifacts/. Copy those
# to tests/data/fuzz/ as regression files (test_engine_fuzz_regress runs them).
set -eu
SECONDS_TO_RUN=${1:-600}
BUILD=${2:-${BUILD:-build}}
make --no-print-directory BUILD="$BUILD" fuzz >/dev/null
D="$BUILD/fuzz"
mkdir -p "$D/seeds" "$D/corpus" "$D/artifacts"
"$D/gen_seeds" "$D/seeds" 8
exec nice -n 19 "$D/fuzz_engine" -max_total_time="$SECONDS_TO_RUN" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$D/artifacts/" "$D/corpus" "$D/seeds" tests/data/fuzz
