# What tools/demo.sh and tools/demo_stereo.sh share; sourced by them once BUILD and OUT are
# set: the programs (M, P, I), the output folder (DEMO_FRESH=1 starts over), reading a figure
# out of a JSON document, the stages and their times, the default latency budget and the
# report.

M=$BUILD/bin/manta
P=$BUILD/bin/manta-profile
I=$BUILD/bin/manta-infer

for b in "$M" "$P" "$I"; do
    [ -x "$b" ] || { echo "demo: $b is missing (run make first)" >&2; exit 1; }
done
[ "${DEMO_FRESH:-0}" = 1 ] && rm -rf "$OUT"
mkdir -p "$OUT"

# The first number / string value of "key" in a JSON document.
json_num() { sed -n "s/.*\"$2\": *\(-\{0,1\}[0-9.eE+-]*\).*/\1/p" "$1" | head -n 1; }
json_str() { sed -n "s/.*\"$2\": *\"\([^\"]*\)\".*/\1/p" "$1" | head -n 1; }

T_ALL=$(date +%s)
STAGE_T0=$T_ALL
TIMES=""
# stage_end: the time of the stage under way into TIMES (now: the time it ended).
stage_end() {
    now=$(date +%s)
    [ -n "${STAGE_NAME:-}" ] && TIMES="$TIMES$(printf '  %-34s %5d s' "$STAGE_NAME" $((now - STAGE_T0)))
"
    STAGE_T0=$now
}
# stage N NAME: the end of the stage under way and the start of stage N of 7.
stage() {
    stage_end
    STAGE_NAME=$2
    echo
    echo "==== [$1/7] $2 ($(date +%H:%M:%S))"
}
# print_times: the stages' times and the total (after stage_end).
print_times() {
    echo "stage times:"
    printf '%s' "$TIMES"
    echo "  total                              $((now - T_ALL)) s"
}

# default_budget [ARGS...]: BUDGET, unless set, 40% of the way from the smallest to the
# largest sub-network's latency predicted by $OUT/latency_table.json (ARGS: more options of
# manta-profile, e.g. --space).
default_budget() {
    [ -n "$BUDGET" ] && return 0
    for a in min max; do
        $P "$@" --lut "$OUT/latency_table.json" --arch $a --runs 1 --min-time-ms 1 --passes 1 \
            --json >"$OUT/$a.json"
    done
    LO=$(json_num "$OUT/min.json" predicted_ms)
    HI=$(json_num "$OUT/max.json" predicted_ms)
    BUDGET=$(awk -v a="$LO" -v b="$HI" 'BEGIN { printf "%.4f", a + 0.4 * (b - a) }')
    echo "predicted latency: smallest sub-network $LO ms, largest $HI ms; budget $BUDGET ms"
}

# report: the plots of the whole job and one page with them (docs/report.md).
report() {
    echo
    echo "==== report"
    $M report "$OUT"
    echo "report:              $OUT/report/index.html (open it in a browser; PNG and SVG beside it)"
}
