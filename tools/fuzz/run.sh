#!/bin/sh
# Run an engine fuzzer for a given time, niced, one process.
#   tools/fuzz/run.sh [SECONDS] [BUILD] [TARGET]      (defaults: 600, build, engine)
# TARGET engine: the whole engine (fuzz_engine); fbread: the FlatBuffers reader
# alone (fuzz_fbread). Builds `make fuzz`, writes the seed corpus
# (exported-style models) to $BUILD/fuzz/seeds, keeps the growing corpus in
# $BUILD/fuzz/corpus (corpus-fbread for the reader) and any crash / timeout /
# out-of-memory input in $BUILD/fuzz/artifacts/. Copy those to
# tests/data/fuzz/ as regression files (test_engine_fuzz_regress runs them).
set -eu
SECONDS_TO_RUN=${1:-600}
BUILD=${2:-${BUILD:-build}}
TARGET=${3:-engine}
case $TARGET in
engine) CORPUS=corpus ;;
fbread) CORPUS=corpus-fbread ;;
*) echo "run.sh: unknown target '$TARGET' (engine or fbread)" >&2; exit 2 ;;
esac
make --no-print-directory BUILD="$BUILD" fuzz >/dev/null
D="$BUILD/fuzz"
mkdir -p "$D/seeds" "$D/$CORPUS" "$D/artifacts"
"$D/gen_seeds" "$D/seeds" 8
exec nice -n 19 "$D/fuzz_$TARGET" -max_total_time="$SECONDS_TO_RUN" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$D/artifacts/" "$D/$CORPUS" "$D/seeds" tests/data/fuzz
